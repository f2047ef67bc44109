console.log("hello from the pack tests");
