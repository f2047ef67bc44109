// A real MCP client for mcpgate's end-to-end test and demo: the TypeScript
// SDK's Client over its StdioClientTransport, which spawns
//
//   MCPGATE serve --config DIR --workspace DIR
//
// and talks to the published server-everything through it. It initializes,
// lists the tools (everything__echo, everything__get-sum and
// everything__trigger-long-running-operation must be among them), calls echo
// and get-sum and checks their texts exactly, runs the long operation with
// an onprogress callback and checks its progress notifications came back (all
// three: those the SDK itself drops because they arrive with the result are
// counted from its onerror), checks a tool that is off is refused, and that
// mcpgate exits 0 when the client closes. Prints TAP lines and
// "N passed, N failed"; exits 0 only when nothing failed.
//
// usage: node tests/e2e/client.mjs --config DIR --workspace DIR
//          [--mcpgate PATH] [--modules DIR] [--server NAME] [--stderr FILE] [--verbose]
//
//   --mcpgate  default: ./mcpgate
//   --modules  the node_modules holding the pinned SDK
//              (default: build/e2e/everything/node_modules of this tree)
//   --server   the server's name in mcp.toml (default everything)
//   --stderr   append mcpgate's stderr to FILE (default: this process's stderr)
//   --verbose  also print each result as a "# " comment line
// The environment is passed to mcpgate whole (XDG_STATE_HOME, XDG_DATA_HOME...).
// Every request has a deadline; nothing here measures time.
import { openSync, closeSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { sdkLoader, tap, toolsOnce } from "./tap.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const top = path.resolve(here, "..", "..");

function parseArgs(argv) {
	const o = {
		mcpgate: path.join(top, "mcpgate"),
		modules: path.join(top, "build", "e2e", "everything", "node_modules"),
		server: "everything",
		config: null,
		workspace: null,
		stderr: null,
		verbose: false,
	};
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		const key = a.replace(/^--/, "");
		if (a === "--verbose") {
			o.verbose = true;
		} else if (a.startsWith("--") && key in o && typeof o[key] !== "boolean" && i + 1 < argv.length) {
			o[key] = argv[++i];
		} else {
			console.error(`client.mjs: unknown or incomplete argument ${a}`);
			process.exit(2);
		}
	}
	if (!o.config || !o.workspace) {
		console.error("client.mjs: --config DIR and --workspace DIR are required");
		process.exit(2);
	}
	for (const k of ["mcpgate", "modules", "config", "workspace"])
		o[k] = path.resolve(o[k]);
	return o;
}

const opts = parseArgs(process.argv.slice(2));

// The SDK comes from the pinned install, not from a node_modules beside this
// file
const load = sdkLoader(opts.modules);
const { Client } = await load("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = await load("@modelcontextprotocol/sdk/client/stdio.js");

const t = tap();
const { ok, note } = t;
function textOf(result) {
	const c = result?.content?.[0];
	return c && c.type === "text" ? c.text : undefined;
}

t.deadline(300_000);

const S = opts.server;
const stderrFd = opts.stderr ? openSync(opts.stderr, "a") : "inherit";
const transport = new StdioClientTransport({
	command: opts.mcpgate,
	args: ["serve", "--config", opts.config, "--workspace", opts.workspace],
	env: { ...process.env },
	cwd: opts.workspace,
	stderr: stderrFd,
});
const client = new Client({ name: "mcpgate-e2e-client", version: "1.0.0" }, { capabilities: {} });
// The SDK hands a progress notification to onprogress in a microtask but
// settles the response at once, so a last notification that arrives in the
// same read as the response finds its handler gone and comes here instead.
const lateProgress = [];
const otherErrors = [];
client.onerror = (e) => {
	const m = /progress notification for an unknown token: (\{.*\})$/s.exec(String(e?.message ?? e));
	if (m) {
		try {
			lateProgress.push(JSON.parse(m[1]).params);
			return;
		} catch {
			// not JSON: kept below
		}
	}
	otherErrors.push(String(e?.message ?? e));
};

try {
	try {
		await client.connect(transport, { timeout: 60_000 });
		const info = client.getServerVersion();
		ok(typeof info?.name === "string" && info.name.length > 0,
			`initialize: the SDK client is connected to ${info?.name} ${info?.version}`, info);
		ok(client.getServerCapabilities()?.tools !== undefined,
			"the gateway declares the tools capability", client.getServerCapabilities());
	} catch (e) {
		ok(false, "initialize through mcpgate serve", String(e));
		throw e;
	}

	// tools/list is answered with the servers that are ready: until its
	// server's tools are there
	const names = await toolsOnce(client, (n) => n.includes(`${S}__echo`), { timeout: 180_000 });
	if (opts.verbose) note(`tools: ${names.join(", ")}`);
	for (const tool of ["echo", "get-sum", "trigger-long-running-operation"])
		ok(names.includes(`${S}__${tool}`), `tools/list offers ${S}__${tool}`, names);
	ok(names.length > 0 && names.every((x) => x.startsWith(`${S}__`)),
		`every tool offered carries its server's prefix ${S}__`, names);
	ok(!names.includes(`${S}__get-env`), `a tool that is off (${S}__get-env) is not offered`, names);

	const message = "hello from the MCP SDK, through mcpgate, to a contained server";
	let r = await client.callTool({ name: `${S}__echo`, arguments: { message } }, undefined,
		{ timeout: 60_000 });
	if (opts.verbose) note(`${S}__echo -> ${JSON.stringify(r.content)}`);
	ok(!r.isError && textOf(r) === `Echo: ${message}`, `${S}__echo returns exactly "Echo: ${message}"`, r);

	r = await client.callTool({ name: `${S}__get-sum`, arguments: { a: 19, b: 23 } }, undefined,
		{ timeout: 60_000 });
	if (opts.verbose) note(`${S}__get-sum -> ${JSON.stringify(r.content)}`);
	ok(!r.isError && textOf(r) === "The sum of 19 and 23 is 42.",
		`${S}__get-sum of 19 and 23 returns exactly "The sum of 19 and 23 is 42."`, r);

	const progress = [];
	r = await client.callTool(
		{ name: `${S}__trigger-long-running-operation`, arguments: { duration: 1, steps: 3 } },
		undefined,
		{ timeout: 60_000, onprogress: (p) => progress.push(p) });
	if (opts.verbose) {
		note(`${S}__trigger-long-running-operation -> ${JSON.stringify(r.content)}`);
		note(`progress notifications received: ${JSON.stringify(progress)}`);
	}
	ok(!r.isError && textOf(r) === "Long running operation completed. Duration: 1 seconds, Steps: 3.",
		`${S}__trigger-long-running-operation (1 s, 3 steps) completes`, r);
	const seen = progress.map((p) => `${p.progress}/${p.total}`).join(" ");
	const late = lateProgress.map((p) => `${p.progress}/${p.total}`).join(" ");
	if (opts.verbose && late) note(`progress after the result (the SDK drops it): ${late}`);
	ok(progress.length > 0 && "1/3 2/3 3/3".startsWith(seen),
		`progress notifications reached the client's onprogress, in order (${seen})`, progress);
	ok([seen, late].filter((x) => x).join(" ") === "1/3 2/3 3/3" &&
		lateProgress.every((p) => typeof p.progressToken === "number"),
		"mcpgate relayed all 3, with the client's own token (those onprogress missed came " +
		`with the result: ${late || "none"})`, { progress, lateProgress });

	let refused = null;
	try {
		const x = await client.callTool({ name: `${S}__get-env`, arguments: {} }, undefined,
			{ timeout: 60_000 });
		refused = x.isError ? `isError: ${textOf(x)}` : null;
	} catch (e) {
		refused = String(e.message ?? e);
	}
	if (opts.verbose && refused) note(`${S}__get-env -> ${refused}`);
	ok(refused !== null, `a call to a tool that is off (${S}__get-env) is refused`, refused);
	ok(otherErrors.length === 0, "the SDK reported no protocol error", otherErrors);
} catch (e) {
	ok(false, "the session went through without an exception", String(e?.stack ?? e));
} finally {
	// the SDK ends mcpgate's input, and signals it only if it is still there
	// 2 s later; mcpgate stops its containers in order either way. Its exit
	// status comes from the child the transport spawned (a field the SDK does
	// not document: without it, only that the process is gone is checked).
	const child = transport._process;
	const exited = child
		? new Promise((res) => {
			if (child.exitCode !== null || child.signalCode !== null) res([child.exitCode, child.signalCode]);
			else child.once("exit", (code, sig) => res([code, sig]));
		})
		: null;
	const pid = transport.pid;
	await client.close().catch(() => {});
	if (exited) {
		let timer;
		const [code, sig] = await Promise.race([exited,
			new Promise((res) => { timer = setTimeout(() => res([null, "still running after 30 s"]), 30_000); })]);
		clearTimeout(timer);
		ok(code === 0, "mcpgate ended in order when the client closed the session (exit status 0)",
			`exit status ${code}, signal ${sig}`);
	} else if (pid) {
		let gone = false;
		for (let i = 0; i < 300 && !gone; i++) {
			try {
				process.kill(pid, 0);
				await new Promise((res) => setTimeout(res, 100));
			} catch {
				gone = true;
			}
		}
		ok(gone, "mcpgate ended when the client closed the session");
	}
	if (typeof stderrFd === "number") closeSync(stderrFd);
}

t.done();
