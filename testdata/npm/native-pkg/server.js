#!/usr/bin/env node
// mcpgate's test package: an MCP server on stdio with one tool, "sql",
// which runs a query in an in-memory database through better-sqlite3, a
// native addon: it answers only if the addon was built for this node.
'use strict';
const readline = require('readline');
function send(m) {
	process.stdout.write(JSON.stringify(m) + '\n');
}
readline.createInterface({ input: process.stdin }).on('line', (line) => {
	let m;
	try {
		m = JSON.parse(line);
	} catch (e) {
		return;
	}
	if (m.id === undefined) return;
	if (m.method === 'initialize') {
		send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion,
			capabilities: { tools: {} }, serverInfo: { name: 'mcpgate-test-native', version: '1.0.0' } } });
	} else if (m.method === 'tools/list') {
		send({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'sql',
			description: 'Runs a query in an in-memory SQLite database (better-sqlite3) and returns its rows as JSON.',
			inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
			annotations: { readOnlyHint: true } }] } });
	} else if (m.method === 'tools/call') {
		let text, isError = false;
		try {
			const Database = require('better-sqlite3');
			const db = new Database(':memory:');
			text = JSON.stringify(db.prepare(m.params.arguments.query).all());
		} catch (e) {
			text = String(e && e.message);
			isError = true;
		}
		send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text }], isError } });
	} else {
		send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no method ' + m.method } });
	}
});
