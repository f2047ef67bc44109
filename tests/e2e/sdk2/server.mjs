// An MCP server of the 2026-07-28 era, built on the TypeScript SDK 2.x
// (@modelcontextprotocol/server, pinned by tests/conformance/2026), for
// tests/integration/sdk2_test.py: it runs contained behind mcpgate, in an
// image made by tests/e2e/sdk2/build-server-image.sh, with no network.
//
// serveStdio decides the era from the opening exchange: server/discover
// (what mcpgate sends a contained server first) makes it a server of
// 2026-07-28, initialize one of 2025-11-25. Its tools, resource and prompt
// answer fixed texts, so a client checks them exactly; the tool `era` says
// which protocol version the request it answers was served at, the server's
// own report of what mcpgate spoke to it.
import { McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { z } from "zod";

const text = (t) => ({ content: [{ type: "text", text: t }] });

function build() {
	const mcp = new McpServer({ name: "mcpgate-sdk2-server", version: "2.4.0-test" },
		{ capabilities: { tools: {}, resources: {}, prompts: {} } });
	mcp.registerTool("echo", {
		description: "Answers its text, prefixed",
		inputSchema: z.object({ text: z.string() }),
	}, async ({ text: t }) => text(`sdk2 echo: ${t}`));
	mcp.registerTool("add", {
		description: "Adds two integers",
		inputSchema: z.object({ a: z.number().int(), b: z.number().int() }),
	}, async ({ a, b }) => text(`sum: ${a + b}`));
	// the version of this request: a 2026-07-28 request carries it in its
	// _meta envelope; a 2025-11-25 one has the version initialize agreed
	mcp.registerTool("era", {
		description: "Says which protocol version this request was served at",
		inputSchema: z.object({}),
	}, async (_args, ctx) => {
		const modern = ctx?.mcpReq?.envelope?.["io.modelcontextprotocol/protocolVersion"];
		if (modern !== undefined)
			return text(`served at ${modern} (the request's _meta)`);
		return text(`served at ${mcp.server.getNegotiatedProtocolVersion() ?? "no version"} (initialize)`);
	});
	mcp.registerResource("note", "sdk2://note", { description: "A fixed note", mimeType: "text/plain" },
		async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: "a note from the 2.x server" }] }));
	mcp.registerPrompt("greet", {
		description: "Greets someone by name",
		argsSchema: z.object({ name: z.string() }),
	}, async ({ name }) => ({
		messages: [{ role: "user", content: { type: "text", text: `Hello, ${name}, from the 2.x server.` } }],
	}));
	return mcp;
}

serveStdio(() => build(), { onerror: (e) => console.error(`sdk2 server: ${e?.message ?? e}`) });
