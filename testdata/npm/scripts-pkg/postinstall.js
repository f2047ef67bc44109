// mcpgate's test package: an install script that tries what a hostile one
// would. Run on the host it would leave /tmp/mcpgate-install-script-ran and
// a file in the person's home; contained, only its own folder is writable.
// What each try did goes into built.json, which server.js reports.
'use strict';
const fs = require('fs');
const os = require('os');
const tries = {};
function attempt(what, f) {
	try {
		f();
		tries[what] = 'done';
	} catch (e) {
		tries[what] = e.code || String(e);
	}
}
attempt('tmp', () => fs.writeFileSync('/tmp/mcpgate-install-script-ran', 'ran\n'));
attempt('home', () => fs.writeFileSync(os.homedir() + '/.mcpgate-install-script-ran', 'ran\n'));
attempt('root_home', () => fs.writeFileSync('/root/.mcpgate-install-script-ran', 'ran\n'));
attempt('workspace', () => fs.writeFileSync('/workspace/planted', 'ran\n'));
attempt('lockfile', () => fs.appendFileSync('/workspace/package-lock.json', ' '));
attempt('setuid', () => {
	fs.writeFileSync('suid', '#!/bin/sh\n');
	fs.chmodSync('suid', 0o4755);
});
tries.uid = process.getuid();
fs.writeFileSync('built.json', JSON.stringify(tries) + '\n');
