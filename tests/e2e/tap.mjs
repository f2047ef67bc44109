// What mcpgate's real-client scripts (client.mjs, added_client.mjs) share:
// TAP lines with a "N passed, N failed" summary, a whole-run deadline, and
// the TypeScript SDK loaded from a pinned install rather than from a
// node_modules beside the script.
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

export function tap() {
	const t = { n: 0, passed: 0, failed: 0 };
	t.ok = (cond, name, detail) => {
		t.n++;
		if (cond) {
			t.passed++;
			console.log(`ok ${t.n} - ${name}`);
		} else {
			t.failed++;
			console.log(`not ok ${t.n} - ${name}`);
			if (detail !== undefined) {
				const text = typeof detail === "string" ? detail : JSON.stringify(detail);
				for (const line of String(text).split("\n").slice(0, 20))
					console.log(`#   ${line}`);
			}
		}
		return cond;
	};
	t.note = (text) => {
		for (const line of String(text).split("\n"))
			console.log(`# ${line}`);
	};
	// a deadline for the whole run, on top of each request's own
	t.deadline = (ms) => {
		const w = setTimeout(() => {
			console.log(`not ok ${t.n + 1} - the client finished within ${ms / 1000} s`);
			console.log(`${t.passed} passed, ${t.failed + 1} failed`);
			process.exit(1);
		}, ms);
		w.unref();
	};
	// the plan and the summary; the exit status says whether all passed
	t.done = () => {
		console.log(`1..${t.n}`);
		console.log(`${t.passed} passed, ${t.failed} failed`);
		process.exit(t.failed === 0 && t.n > 0 ? 0 : 1);
	};
	return t;
}

// The names of the tools the client is offered once want(names) holds:
// mcpgate answers tools/list at once with the servers that are ready and
// tells of the rest as they come (docs/2026-12-02-never-wait.md), so a test
// that wants a server's tools lists again until they are there, as a client
// does on list_changed; the last list when ms pass first
export async function toolsOnce(client, want, opts, ms = 180_000) {
	const deadline = Date.now() + ms;
	for (;;) {
		const names = (await client.listTools(undefined, opts)).tools.map((x) => x.name);
		if (want(names) || Date.now() > deadline)
			return names;
		await new Promise((r) => setTimeout(r, 200));
	}
}

// import(spec) resolved from the node_modules folder `modules` (its
// "require" build, the same API)
export function sdkLoader(modules) {
	const sdk = createRequire(path.join(modules, "x.js"));
	return async (spec) => import(pathToFileURL(sdk.resolve(spec)).href);
}
