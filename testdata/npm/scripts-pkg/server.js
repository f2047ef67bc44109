#!/usr/bin/env node
// mcpgate's test package: an MCP server on stdio with one tool, "built",
// which returns built.json (what the install script left), or "not built".
'use strict';
const fs = require('fs');
const path = require('path');
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
			capabilities: { tools: {} }, serverInfo: { name: 'mcpgate-test-scripts', version: '1.0.0' } } });
	} else if (m.method === 'tools/list') {
		send({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'built',
			description: 'Returns what the install script left (built.json), or "not built".',
			inputSchema: { type: 'object', properties: {} }, annotations: { readOnlyHint: true } }] } });
	} else if (m.method === 'tools/call') {
		let text = 'not built';
		try {
			text = fs.readFileSync(path.join(__dirname, 'built.json'), 'utf8');
		} catch (e) {}
		send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text }] } });
	} else {
		send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no method ' + m.method } });
	}
});
