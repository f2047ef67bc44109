// Loaded with `node --import` before the conformance suite's server mode:
// gives each of its HTTP requests to the listener mcpgate's bearer token.
//
// The suite (0.1.16 and 0.2.0) has no option for a header: its client is
// the SDK's StreamableHTTPClientTransport with no request options (the SDK
// calls the global fetch), some scenarios send raw requests with undici's
// request(), and 0.2.0's http-*-validation ones with node:http's request().
// All three are wrapped here, for requests to MCPGATE_CONFORMANCE_URL's
// origin only; every other header, the Host and Origin the scenarios set
// included, goes out as the suite wrote it. The token is read from
// MCPGATE_CONFORMANCE_TOKEN_FILE (the listener's own token file), so it is in
// no argument list or environment.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire, syncBuiltinESMExports } from 'node:module';

const url = process.env.MCPGATE_CONFORMANCE_URL;
const tokenFile = process.env.MCPGATE_CONFORMANCE_TOKEN_FILE;
if (!url || !tokenFile) {
  throw new Error('bearer.mjs needs MCPGATE_CONFORMANCE_URL and MCPGATE_CONFORMANCE_TOKEN_FILE');
}
const origin = new URL(url).origin;
const token = readFileSync(tokenFile, 'utf8').trim();
if (!/^[0-9a-f]{64}$/.test(token)) throw new Error(`${tokenFile} holds no token`);
const authorization = 'Bearer ' + token;

const toListener = (target) => {
  try {
    return new URL(target instanceof Request ? target.url : String(target)).origin === origin;
  } catch {
    return false;
  }
};

const fetchBefore = globalThis.fetch;
globalThis.fetch = (input, init) => {
  if (!toListener(input)) return fetchBefore(input, init);
  const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
  if (!headers.has('authorization')) headers.set('authorization', authorization);
  return fetchBefore(input, { ...init, headers });
};

// The suite imports undici as an ES module from its own node_modules; the
// package is CommonJS, so the named export it gets is read from
// module.exports when first imported, which is after this file has run.
const suiteRequire = createRequire(process.env.MCPGATE_CONFORMANCE_SUITE ?? process.argv[1]);
const undici = suiteRequire('undici');
const requestBefore = undici.request;
undici.request = (target, options = {}) => {
  if (!toListener(target)) return requestBefore(target, options);
  const headers = { ...(options.headers ?? {}) };
  if (!Object.keys(headers).some((k) => k.toLowerCase() === 'authorization')) {
    headers.authorization = authorization;
  }
  return requestBefore(target, { ...options, headers });
};

// http.request(options, callback), the only form the suite calls; a URL or
// string first argument is passed on as it is
const httpRequestBefore = http.request;
http.request = (options, ...rest) => {
  if (options === null || typeof options !== 'object' || options instanceof URL) {
    return httpRequestBefore(options, ...rest);
  }
  const target = `http://${options.hostname ?? options.host}${options.port ? ':' + options.port : ''}/`;
  if (!toListener(target)) return httpRequestBefore(options, ...rest);
  const headers = { ...(options.headers ?? {}) };
  if (!Object.keys(headers).some((k) => k.toLowerCase() === 'authorization')) {
    headers.authorization = authorization;
  }
  return httpRequestBefore({ ...options, headers }, ...rest);
};
syncBuiltinESMExports();
