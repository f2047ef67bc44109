// A real MCP client for mcpgate serve --listen: the TypeScript SDK's Client
// over its StreamableHTTPClientTransport, with the listener's bearer token in
// every request. It connects (initialize over POST, the Mcp-Session-Id
// kept), lists the tools (alpha__echo must be among them), calls
// alpha__echo and checks its text exactly, asks for a tool that is off and
// checks it is refused, then ends the session (DELETE) and closes. Prints
// TAP lines and "N passed, N failed"; exits 0 only when nothing failed.
//
// usage: node tests/e2e/http_client.mjs --url URL --token-file PATH --modules DIR
// Every request has a deadline; nothing here measures time.
import { readFileSync } from "node:fs";

import { sdkLoader, tap, toolsOnce } from "./tap.mjs";

const o = { url: null, "token-file": null, modules: null };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
	const key = argv[i].replace(/^--/, "");
	if (!(key in o) || i + 1 >= argv.length) {
		console.error(`http_client.mjs: unknown or incomplete argument ${argv[i]}`);
		process.exit(2);
	}
	o[key] = argv[++i];
}
if (!o.url || !o["token-file"] || !o.modules) {
	console.error("http_client.mjs: --url, --token-file and --modules are required");
	process.exit(2);
}

const load = sdkLoader(o.modules);
const { Client } = await load("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = await load(
	"@modelcontextprotocol/sdk/client/streamableHttp.js",
);

const t = tap();
t.deadline(60000);
const token = readFileSync(o["token-file"], "utf8").trim();
const transport = new StreamableHTTPClientTransport(new URL(o.url), {
	requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "mcpgate-http-e2e", version: "1.0.0" });
const opts = { timeout: 30000 };
try {
	await client.connect(transport, opts);
	t.ok(typeof transport.sessionId === "string" && transport.sessionId.length === 32,
		"connected; the listener gave an Mcp-Session-Id", transport.sessionId);
	const names = await toolsOnce(client, (n) => n.includes("alpha__echo"), opts, 60_000);
	t.ok(names.includes("alpha__echo"), "tools/list names alpha__echo", names);
	const r = await client.callTool({ name: "alpha__echo", arguments: { text: "through HTTP" } },
		undefined, opts);
	t.ok(r.content?.[0]?.text === "through HTTP", "tools/call alpha__echo returns its text", r);
	let refused = null;
	try {
		await client.callTool({ name: "alpha__status", arguments: {} }, undefined, opts);
	} catch (e) {
		refused = e;
	}
	t.ok(refused !== null && /unknown tool/.test(String(refused.message)),
		"a tool that is off is refused", String(refused));
	await transport.terminateSession();
	t.ok(transport.sessionId === undefined, "the session is ended (DELETE)");
	await client.close();
} catch (e) {
	t.ok(false, "the client ran without an error", String(e?.stack ?? e));
}
t.done();
