// A real MCP client for mcpgate's add test (tests/integration/add_test.py):
// the TypeScript SDK's Client over its StdioClientTransport, which spawns
//
//   MCPGATE serve --config DIR --workspace DIR
//
// in front of two servers that `mcpgate add` made from npm: "files"
// (server-filesystem, /workspace/ro read-only and /workspace/rw read-write)
// and "server-memory". This client declares elicitation, so the write tool
// that asks before each call is offered to it. It reads a file through the
// read-only mount, writes one through the read-write mount after accepting
// mcpgate's question, has a second write refused by declining it, and reads
// the memory server's graph. Prints TAP lines and "N passed, N failed";
// exits 0 only when nothing failed.
//
// usage: node tests/e2e/added_client.mjs --mcpgate PATH --config DIR
//          --workspace DIR --modules DIR [--stderr FILE]
//
//   --modules  the node_modules holding the pinned SDK (build/e2e/clients)
// The environment is passed to mcpgate whole (XDG_STATE_HOME, XDG_DATA_HOME...).
import { openSync } from "node:fs";
import path from "node:path";

import { sdkLoader, tap, toolsOnce } from "./tap.mjs";

const o = { mcpgate: null, config: null, workspace: null, modules: null, stderr: null };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) {
	const key = argv[i].replace(/^--/, "");
	if (!argv[i].startsWith("--") || !(key in o) || i + 1 >= argv.length) {
		console.error(`added_client.mjs: unknown or incomplete argument ${argv[i]}`);
		process.exit(2);
	}
	o[key] = path.resolve(argv[i + 1]);
}
for (const k of ["mcpgate", "config", "workspace", "modules"])
	if (!o[k]) {
		console.error(`added_client.mjs: --${k} is required`);
		process.exit(2);
	}

const load = sdkLoader(o.modules);
const { Client } = await load("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = await load("@modelcontextprotocol/sdk/client/stdio.js");
const { ElicitRequestSchema } = await load("@modelcontextprotocol/sdk/types.js");

const t = tap();
const { ok } = t;
const textOf = (r) => (r?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");

t.deadline(300_000);

const transport = new StdioClientTransport({
	command: o.mcpgate,
	args: ["serve", "--config", o.config, "--workspace", o.workspace],
	env: { ...process.env },
	cwd: o.workspace,
	stderr: o.stderr ? openSync(o.stderr, "a") : "inherit",
});
const client = new Client({ name: "mcpgate-add-test-client", version: "1.0.0" },
	{ capabilities: { elicitation: {} } });
// what mcpgate asks, and the answer this client gives next
const asked = [];
let answer = "accept";
client.setRequestHandler(ElicitRequestSchema, async (req) => {
	asked.push(req.params.message);
	return answer === "accept" ? { action: "accept", content: {} } : { action: answer };
});

try {
	await client.connect(transport, { timeout: 120_000 });
	const wanted = ["files__read_text_file", "files__write_file", "server-memory__read_graph"];
	const tools = (await toolsOnce(client, (n) => wanted.every((x) => n.includes(x)),
		{ timeout: 180_000 })).sort();
	ok(["files__read_text_file", "files__write_file", "server-memory__read_graph"].every((t) => tools.includes(t)),
		"the SDK client is offered the approved tools, the write tool too (it can ask)", tools);

	const read = await client.callTool({ name: "files__read_text_file", arguments: { path: "/workspace/ro/notes.txt" } },
		undefined, { timeout: 60_000 });
	ok(!read.isError && textOf(read).includes("read me through"), "a file is read through the read-only mount", read);

	const w = await client.callTool({ name: "files__write_file",
		arguments: { path: "/workspace/rw/from-sdk.txt", content: "written by the SDK client\n" } },
		undefined, { timeout: 120_000 });
	ok(!w.isError && asked.length === 1 && asked[0].includes("files") && asked[0].includes("write_file") &&
		asked[0].includes("from-sdk.txt"),
		"the write asks first, naming the server, the tool and its arguments; accepted, it runs", { w, asked });

	answer = "decline";
	const d = await client.callTool({ name: "files__write_file",
		arguments: { path: "/workspace/rw/declined.txt", content: "must not be written\n" } },
		undefined, { timeout: 120_000 });
	ok(d.isError === true && textOf(d).includes("declined") && asked.length === 2,
		"a declined write is refused", d);

	const g = await client.callTool({ name: "server-memory__read_graph", arguments: {} }, undefined, { timeout: 60_000 });
	ok(!g.isError && textOf(g).includes("entities"), "the memory server answers", g);
} catch (e) {
	ok(false, "the session ran without an error", String(e?.stack ?? e));
} finally {
	await client.close().catch(() => {});
}
t.done();
