// A real MCP client in front of mcpgate, for tests/integration/sdk2_test.py:
// the TypeScript SDK's Client of either line, 2.x (@modelcontextprotocol/client,
// pinned by tests/conformance/2026) or 1.x (@modelcontextprotocol/sdk, pinned
// by tests/conformance), over stdio (it spawns `MCPGATE serve`) or over
// mcpgate's listener (streamable HTTP, the listener's token as a bearer).
//
// It connects, checks the protocol version it ended up speaking, then, for
// each contained server it is told of, lists the tools, calls them, reads a
// resource and gets a prompt through mcpgate, checking every answer's content
// exactly:
//
//   sdk2     tests/e2e/sdk2/server.mjs (SDK 2.x): echo, add, era (the version
//            mcpgate spoke to it), the resource sdk2://note, the prompt greet
//   fixture  tests/conformance/fixture-server.mjs (SDK 1.x): test_simple_text,
//            the resource test://static-text, the prompt test_prompt_with_arguments
//
// How the 2.x Client chooses its era: `versionNegotiation.mode` is "legacy"
// unless the caller says otherwise (initialize, 2025-11-25, as a 1.x client);
// "auto" sends server/discover first and speaks 2026-07-28 when the answer
// offers it, else falls back to initialize. On stdio, "auto" probes on a
// short-lived second process of the same command (a second `mcpgate serve`,
// with a session of its own), then starts the one it keeps. --negotiation
// picks the mode ("default": the option left out, as most callers do);
// --expect-version is the version the client must report.
//
// usage: node tests/e2e/sdk2/client.mjs --sdk 1|2 --modules DIR --label TEXT
//          --servers sdk2,fixture [--negotiation default|auto|legacy] [--expect-version V]
//          (--mcpgate PATH --config DIR --workspace DIR --stderr FILE | --url URL --token-file PATH)
// The environment is passed to mcpgate whole. Prints TAP lines and
// "N passed, N failed"; exits 0 only when nothing failed. Every request has
// a deadline; nothing here measures time.
import { closeSync, openSync, readFileSync } from "node:fs";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";

import { sdkLoader, tap, toolsOnce } from "../tap.mjs";

const o = {
	sdk: null, modules: null, label: null, servers: null, negotiation: "default",
	"expect-version": null, mcpgate: null, config: null, workspace: null, stderr: null,
	url: null, "token-file": null,
};
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
	const key = argv[i].replace(/^--/, "");
	if (!argv[i].startsWith("--") || !(key in o) || i + 1 >= argv.length) {
		console.error(`sdk2/client.mjs: unknown or incomplete argument ${argv[i]}`);
		process.exit(2);
	}
	o[key] = argv[++i];
}
const stdio = o.url === null;
const missing = ["sdk", "modules", "label", "servers"]
	.concat(stdio ? ["mcpgate", "config", "workspace", "stderr"] : ["token-file"])
	.filter((k) => !o[k]);
if (missing.length || !["1", "2"].includes(o.sdk) ||
	!["default", "auto", "legacy"].includes(o.negotiation) || (o.sdk === "1" && o.negotiation !== "default")) {
	console.error(`sdk2/client.mjs: needs --${missing.join(", --") || "sdk 1|2"}; --negotiation ` +
		"is default, auto or legacy, and only default for --sdk 1 (it has no such option)");
	process.exit(2);
}
const servers = o.servers.split(",");
for (const s of servers) {
	if (!["sdk2", "fixture"].includes(s)) {
		console.error(`sdk2/client.mjs: --servers names sdk2 and fixture, not ${s}`);
		process.exit(2);
	}
}

const load = sdkLoader(o.modules);
let Client, StdioClientTransport, StreamableHTTPClientTransport;
if (o.sdk === "2") {
	({ Client, StreamableHTTPClientTransport } = await load("@modelcontextprotocol/client"));
	({ StdioClientTransport } = await load("@modelcontextprotocol/client/stdio"));
} else {
	({ Client } = await load("@modelcontextprotocol/sdk/client/index.js"));
	({ StdioClientTransport } = await load("@modelcontextprotocol/sdk/client/stdio.js"));
	({ StreamableHTTPClientTransport } = await load("@modelcontextprotocol/sdk/client/streamableHttp.js"));
}
const pkg = o.sdk === "2" ? "@modelcontextprotocol/client" : "@modelcontextprotocol/sdk";
const version = JSON.parse(readFileSync(path.join(o.modules, pkg, "package.json"), "utf8")).version;

const t = tap();
t.deadline(240000);
const L = o.label;
const opts = { timeout: 60000 };
t.note(`${L}: SDK ${version}, ${stdio ? "stdio" : o.url}, negotiation ${o.sdk === "2" ? o.negotiation : "(1.x: initialize)"}`);

let stderrFd = null;
let transport;
if (stdio) {
	stderrFd = openSync(o.stderr, "a");
	transport = new StdioClientTransport({
		command: o.mcpgate,
		args: ["serve", "--config", o.config, "--workspace", o.workspace],
		env: process.env,
		cwd: o.workspace,
		stderr: stderrFd,
	});
} else {
	const token = readFileSync(o["token-file"], "utf8").trim();
	transport = new StreamableHTTPClientTransport(new URL(o.url), {
		requestInit: { headers: { Authorization: `Bearer ${token}` } },
	});
}
const clientOptions = { capabilities: {} };
if (o.sdk === "2" && o.negotiation !== "default")
	clientOptions.versionNegotiation = { mode: o.negotiation };
const client = new Client({ name: `mcpgate-${L}`, version: "1.0.0" }, clientOptions);

const call = (params) => o.sdk === "2" ? client.callTool(params, opts) : client.callTool(params, undefined, opts);
// as JSON, what came over the wire (no class instances or undefined members)
const plain = (x) => JSON.parse(JSON.stringify(x));

async function check(name, f) {
	try {
		await f();
	} catch (e) {
		t.ok(false, `${L}: ${name} ran without an error`, String(e?.stack ?? e));
	}
}

async function sdk2Server(tools) {
	const want = ["sdk2__add", "sdk2__echo", "sdk2__era"];
	t.ok(want.every((x) => tools.includes(x)), `${L}: tools/list names the 2.x server's echo, add and era`, tools);
	await check("sdk2__echo", async () => {
		const r = await call({ name: "sdk2__echo", arguments: { text: "through mcpgate" } });
		t.ok(isDeepStrictEqual(plain(r.content), [{ type: "text", text: "sdk2 echo: through mcpgate" }]) &&
			r.isError !== true, `${L}: tools/call sdk2__echo answers its text exactly`, r);
	});
	await check("sdk2__add", async () => {
		const r = await call({ name: "sdk2__add", arguments: { a: 2, b: 40 } });
		t.ok(isDeepStrictEqual(plain(r.content), [{ type: "text", text: "sum: 42" }]),
			`${L}: tools/call sdk2__add answers sum: 42`, r);
	});
	await check("sdk2__era", async () => {
		const r = await call({ name: "sdk2__era", arguments: {} });
		const said = r.content?.[0]?.text;
		t.note(`${L}: the 2.x server says: ${said}`);
		t.ok(said === "served at 2026-07-28 (the request's _meta)",
			`${L}: the 2.x server says mcpgate spoke 2026-07-28 to it, in the request's _meta`, r);
	});
	await check("resources", async () => {
		const listed = await client.listResources({}, opts);
		const uris = listed.resources.map((x) => x.uri);
		t.ok(uris.includes("mcpgate://sdk2/sdk2://note"), `${L}: resources/list names mcpgate://sdk2/sdk2://note`, uris);
		const r = await client.readResource({ uri: "mcpgate://sdk2/sdk2://note" }, opts);
		t.ok(isDeepStrictEqual(plain(r.contents), [{
			uri: "mcpgate://sdk2/sdk2://note", mimeType: "text/plain", text: "a note from the 2.x server",
		}]), `${L}: resources/read of the 2.x server's note answers its text exactly`, r);
	});
	await check("prompts", async () => {
		const listed = await client.listPrompts({}, opts);
		const names = listed.prompts.map((x) => x.name);
		t.ok(names.includes("sdk2__greet"), `${L}: prompts/list names sdk2__greet`, names);
		const r = await client.getPrompt({ name: "sdk2__greet", arguments: { name: "Ada" } }, opts);
		t.ok(isDeepStrictEqual(plain(r.messages), [{
			role: "user", content: { type: "text", text: "Hello, Ada, from the 2.x server." },
		}]), `${L}: prompts/get sdk2__greet answers its message exactly`, r);
	});
}

async function fixtureServer(tools) {
	t.ok(tools.includes("fixture__test_simple_text"), `${L}: tools/list names the 1.x server's test_simple_text`, tools);
	await check("fixture__test_simple_text", async () => {
		const r = await call({ name: "fixture__test_simple_text", arguments: {} });
		t.ok(isDeepStrictEqual(plain(r.content), [{ type: "text", text: "This is a simple text response for testing." }]),
			`${L}: tools/call fixture__test_simple_text answers its text exactly`, r);
	});
	await check("resources", async () => {
		const uri = "mcpgate://fixture/test://static-text";
		const r = await client.readResource({ uri }, opts);
		t.ok(isDeepStrictEqual(plain(r.contents), [{
			uri, mimeType: "text/plain", text: "This is the content of the static text resource.",
		}]), `${L}: resources/read of the 1.x server's static text answers it exactly`, r);
	});
	await check("prompts", async () => {
		const r = await client.getPrompt({
			name: "fixture__test_prompt_with_arguments", arguments: { arg1: "paris", arg2: "through mcpgate" },
		}, opts);
		t.ok(isDeepStrictEqual(plain(r.messages), [{
			role: "user", content: { type: "text", text: "Prompt with arguments: arg1='paris', arg2='through mcpgate'" },
		}]), `${L}: prompts/get fixture__test_prompt_with_arguments answers its message exactly`, r);
	});
}

try {
	await client.connect(transport, opts);
	const info = client.getServerVersion();
	if (o.sdk === "2") {
		const era = client.getProtocolEra();
		const v = client.getNegotiatedProtocolVersion();
		t.note(`${L}: the client speaks ${v} (era ${era}) to ${info?.name ?? "an unnamed server"}`);
		const wantEra = o["expect-version"] === "2026-07-28" ? "modern" : "legacy";
		t.ok(o["expect-version"] === null || (v === o["expect-version"] && era === wantEra),
			`${L}: connected, and the 2.x client speaks ${o["expect-version"]} (${wantEra})`,
			{ version: v, era });
		if (era === "modern") {
			const d = client.getDiscoverResult();
			t.ok(d?.supportedVersions?.includes("2026-07-28"),
				`${L}: mcpgate's server/discover offered 2026-07-28`, d);
		}
	} else {
		// the 1.x client keeps the version it agreed on only for HTTP's
		// header; on stdio the audit log's client.initialize says it
		if (stdio) {
			t.note(`${L}: connected (the version it agreed on is in the audit log)`);
		} else {
			const v = transport.protocolVersion;
			t.note(`${L}: the client speaks ${v} to ${info?.name}`);
			t.ok(o["expect-version"] === null || v === o["expect-version"],
				`${L}: connected, and the 1.x client speaks ${o["expect-version"]}`, v);
		}
	}
	t.ok(info?.name === "mcpgate", `${L}: the server the client sees is mcpgate`, info);
	const want = [...(servers.includes("sdk2") ? ["sdk2__echo"] : []),
		...(servers.includes("fixture") ? ["fixture__test_simple_text"] : [])];
	const tools = await toolsOnce(client, (n) => want.every((x) => n.includes(x)), opts, 120_000);
	if (servers.includes("sdk2"))
		await sdk2Server(tools);
	if (servers.includes("fixture"))
		await fixtureServer(tools);
	await client.close();
	t.ok(true, `${L}: the client closed`);
} catch (e) {
	t.ok(false, `${L}: the client ran without an error`, String(e?.stack ?? e));
}
if (stderrFd !== null)
	closeSync(stderrFd);
t.done();
