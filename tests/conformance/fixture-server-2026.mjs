// The server behind mcpgate in the conformance suite's 2026-07-28 server
// scenarios (tests/integration/conformance_server_test.py, era 2026-07-28):
// an MCP server of the 2026-07-28 era on stdio, on the TypeScript SDK 2.x
// (@modelcontextprotocol/server, pinned by tests/conformance/2026), with the
// tools, resources and prompts those scenarios call by name, each answering
// what the scenario's description asks for. Written here from those
// descriptions; it runs contained, in an image built by
// tests/conformance/build-fixture-image.sh --era 2026-07-28, with no network.
//
// The input-required-result-* tools answer `resultType: "input_required"`
// with the SDK's own multi-round-trip support (inputRequired, acceptedContent,
// an HMAC requestState codec) and complete on the retry.
//
// With --http PORT it serves the same server on http://127.0.0.1:PORT/mcp
// instead (the SDK's createMcpHandler, localhost Host/Origin only), so that
// the suite can be pointed at the fixture itself, without mcpgate: that is
// how the fixture's own answers are checked.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import {
  CLIENT_CAPABILITIES_META_KEY,
  McpServer,
  ResourceTemplate,
  completable,
  createMcpHandler,
  createRequestStateCodec,
  fromJsonSchema,
  hostHeaderValidationResponse,
  inputRequired,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  originValidationResponse,
  ResourceNotFoundError
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';

// a 1x1 PNG (one blue pixel) and a 16-bit mono WAV of one silent sample,
// both made for these tests
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mNQSDgAAAHkAUGi6zIMAAAAAElFTkSuQmCC';
const WAV = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA==';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (t) => ({ content: [{ type: 'text', text: t }] });
const none = z.object({});

// requestState is sealed with a key of this process: every round of a flow
// reaches the same process (one contained server per session behind mcpgate,
// one process in --http mode)
const stateCodec = createRequestStateCodec({ key: randomBytes(32) });

// a bare elicitation answer with content for `key`, or undefined
const accepted = (responses, key) => {
  const r = responses?.[key];
  if (!r || typeof r !== 'object' || r.action !== 'accept') return undefined;
  return r.content && typeof r.content === 'object' ? r.content : undefined;
};
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const sampled = (r) => (isObject(r) && isObject(r.content) && typeof r.content.text === 'string' ? r.content.text : undefined);
const rooted = (r) => (isObject(r) && Array.isArray(r.roots) ? r.roots : undefined);

const askName = (message = 'What is your name?') =>
  inputRequired.elicit({
    message,
    requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }
  });

const JSON_SCHEMA_2020_12 = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: {
    address: {
      $anchor: 'addressDef',
      type: 'object',
      properties: { street: { type: 'string' }, city: { type: 'string' } }
    }
  },
  properties: {
    name: { type: 'string' },
    address: { $ref: '#/$defs/address' },
    contactMethod: { type: 'string', enum: ['phone', 'email'] },
    phone: { type: 'string' },
    email: { type: 'string' }
  },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
  then: { required: ['phone'] },
  else: { required: ['email'] },
  additionalProperties: false
};

const added = { tool: false, prompt: false };
let announce = { toolsChanged() {}, promptsChanged() {} };

function makeServer() {
  const mcp = new McpServer(
    { name: 'mcpgate-conformance-fixture-2026', version: '1.0.0' },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { listChanged: true },
        prompts: { listChanged: true },
        logging: {},
        completions: {}
      },
      requestState: { verify: stateCodec.verify },
      cacheHints: {
        'tools/list': { ttlMs: 60000, cacheScope: 'public' },
        'prompts/list': { ttlMs: 60000, cacheScope: 'public' },
        'resources/list': { ttlMs: 60000, cacheScope: 'public' },
        'resources/templates/list': { ttlMs: 60000, cacheScope: 'public' },
        'resources/read': { ttlMs: 30000, cacheScope: 'private' }
      }
    }
  );

  mcp.registerTool('test_simple_text', { description: 'Answers one text item', inputSchema: none }, async () =>
    text('This is a simple text response for testing.')
  );
  mcp.registerTool('test_image_content', { description: 'Answers one PNG image', inputSchema: none }, async () => ({
    content: [{ type: 'image', data: PNG, mimeType: 'image/png' }]
  }));
  mcp.registerTool('test_audio_content', { description: 'Answers one WAV clip', inputSchema: none }, async () => ({
    content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }]
  }));
  mcp.registerTool(
    'test_embedded_resource',
    { description: 'Answers an embedded resource', inputSchema: none },
    async () => ({
      content: [
        {
          type: 'resource',
          resource: {
            uri: 'test://embedded-resource',
            mimeType: 'text/plain',
            text: 'This is an embedded resource content.'
          }
        }
      ]
    })
  );
  mcp.registerTool(
    'test_multiple_content_types',
    { description: 'Answers text, an image and a resource', inputSchema: none },
    async () => ({
      content: [
        { type: 'text', text: 'Multiple content types test:' },
        { type: 'image', data: PNG, mimeType: 'image/png' },
        {
          type: 'resource',
          resource: {
            uri: 'test://mixed-content-resource',
            mimeType: 'application/json',
            text: JSON.stringify({ test: 'data', value: 123 })
          }
        }
      ]
    })
  );
  mcp.registerTool(
    'test_tool_with_progress',
    { description: 'Reports progress 0, 50 and 100 of 100', inputSchema: none },
    async (_args, ctx) => {
      const token = ctx.mcpReq._meta?.progressToken;
      for (const progress of [0, 50, 100]) {
        if (token !== undefined) {
          await ctx.mcpReq.notify({
            method: 'notifications/progress',
            params: { progressToken: token, progress, total: 100, message: `Completed step ${progress} of 100` }
          });
        }
        if (progress < 100) await sleep(50);
      }
      return text('Progress reported');
    }
  );
  mcp.registerTool('test_error_handling', { description: 'Always fails', inputSchema: none }, async () => ({
    isError: true,
    content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }]
  }));
  mcp.registerTool(
    'json_schema_2020_12_tool',
    { description: 'Tool with JSON Schema 2020-12 features', inputSchema: fromJsonSchema(JSON_SCHEMA_2020_12) },
    async (args) => text('Called with ' + JSON.stringify(args ?? {}))
  );

  // a tool whose arguments are mirrored in Mcp-Param-* headers (SEP-2243):
  // http-custom-header-server-validation checks that a request's headers
  // must agree with its body
  mcp.registerTool(
    'test_custom_headers',
    {
      description: 'Echoes a region and a priority that the client mirrors in headers',
      inputSchema: fromJsonSchema({
        type: 'object',
        properties: {
          region: { type: 'string', description: 'A region name', 'x-mcp-header': 'Region' },
          priority: { type: 'integer', description: 'A priority', 'x-mcp-header': 'Priority' },
          query: { type: 'string', description: 'Not mirrored' }
        },
        required: ['region']
      })
    },
    async (args) => text(`region=${args.region}, priority=${args.priority ?? '-'}, query=${args.query ?? '-'}`)
  );

  // server-stateless's diagnostic tools
  mcp.registerTool(
    'test_missing_capability',
    { description: "Needs the client's sampling capability", inputSchema: none },
    // the SDK's seam answers -32021 for an input request whose capability
    // the request's clientCapabilities lack, before anything is sent
    async () =>
      inputRequired({
        inputRequests: {
          answer: inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: 'Say hello' } }],
            maxTokens: 20
          })
        }
      })
  );
  mcp.registerTool(
    'test_streaming_elicitation',
    { description: 'Reports progress, then asks for a name', inputSchema: none },
    async (_args, ctx) => {
      const name = accepted(ctx.mcpReq.inputResponses, 'user_name')?.name;
      if (typeof name === 'string') return text(`Hello, ${name}!`);
      const token = ctx.mcpReq._meta?.progressToken;
      if (token !== undefined) {
        await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: 1 } });
      }
      return inputRequired({ inputRequests: { user_name: askName() } });
    }
  );
  mcp.registerTool(
    'test_logging_tool',
    { description: 'Logs one message at info', inputSchema: none },
    async (_args, ctx) => {
      await ctx.mcpReq.log('info', 'test_logging_tool ran');
      return text('Logged one message');
    }
  );
  // the list changes of test_trigger_*: the added tool and prompt are kept
  // for the process (--http makes a server per request), registered on this
  // server, and announced: on stdio by the SDK as the server changes, in
  // --http mode by the handler's subscription bus (announce)
  const addTool = () =>
    mcp.registerTool('test_added_tool', { description: 'Added by test_trigger_tool_change', inputSchema: none }, async () =>
      text('added')
    );
  const addPrompt = () =>
    mcp.registerPrompt('test_added_prompt', { description: 'Added by test_trigger_prompt_change' }, async () => ({
      messages: [{ role: 'user', content: { type: 'text', text: 'added' } }]
    }));
  let addedTool = added.tool ? addTool() : null;
  let addedPrompt = added.prompt ? addPrompt() : null;
  mcp.registerTool(
    'test_trigger_tool_change',
    { description: 'Adds or removes a tool, so the tool list changes', inputSchema: none },
    async () => {
      added.tool = !added.tool;
      if (addedTool) addedTool.remove();
      addedTool = added.tool ? addTool() : null;
      announce.toolsChanged();
      return text(`Tool list changed: test_added_tool is ${added.tool ? 'there' : 'gone'}`);
    }
  );
  mcp.registerTool(
    'test_trigger_prompt_change',
    { description: 'Adds or removes a prompt, so the prompt list changes', inputSchema: none },
    async () => {
      added.prompt = !added.prompt;
      if (addedPrompt) addedPrompt.remove();
      addedPrompt = added.prompt ? addPrompt() : null;
      announce.promptsChanged();
      return text(`Prompt list changed: test_added_prompt is ${added.prompt ? 'there' : 'gone'}`);
    }
  );

  // input-required-result-*: multi-round-trip tools
  mcp.registerTool(
    'test_input_required_result_elicitation',
    { description: 'Asks for a name, then greets', inputSchema: none },
    async (_args, ctx) => {
      const name = accepted(ctx.mcpReq.inputResponses, 'user_name')?.name;
      // a missing, wrong or malformed answer is asked for again
      if (typeof name !== 'string') return inputRequired({ inputRequests: { user_name: askName() } });
      return text(`Hello, ${name}!`);
    }
  );
  mcp.registerTool(
    'test_input_required_result_sampling',
    { description: "Asks the client's model a question", inputSchema: none },
    async (_args, ctx) => {
      const said = sampled(ctx.mcpReq.inputResponses?.capital_question);
      if (said === undefined) {
        return inputRequired({
          inputRequests: {
            capital_question: inputRequired.createMessage({
              messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
              maxTokens: 100
            })
          }
        });
      }
      return text(`The model said: ${said}`);
    }
  );
  mcp.registerTool(
    'test_input_required_result_list_roots',
    { description: "Asks for the client's roots", inputSchema: none },
    async (_args, ctx) => {
      const roots = rooted(ctx.mcpReq.inputResponses?.client_roots);
      if (roots === undefined) return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
      return text(`Roots: ${roots.map((r) => r.uri).join(', ') || '(none)'}`);
    }
  );
  mcp.registerTool(
    'test_input_required_result_request_state',
    { description: 'Asks for a confirmation with a sealed requestState', inputSchema: none },
    async (_args, ctx) => {
      const state = ctx.mcpReq.requestState();
      const ok = accepted(ctx.mcpReq.inputResponses, 'confirm')?.ok;
      if (state?.flow === 'request_state' && typeof ok === 'boolean') {
        return text(`state-ok: the requestState came back intact, ok=${ok}`);
      }
      return inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({
            message: 'Please confirm',
            requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] }
          })
        },
        requestState: await stateCodec.mint({ flow: 'request_state' })
      });
    }
  );
  mcp.registerTool(
    'test_input_required_result_multiple_inputs',
    { description: 'Asks for a name, a greeting and the roots at once', inputSchema: none },
    async (_args, ctx) => {
      const r = ctx.mcpReq.inputResponses;
      const state = ctx.mcpReq.requestState();
      const name = accepted(r, 'user_name')?.name;
      const greeting = sampled(r?.greeting);
      const roots = rooted(r?.client_roots);
      if (state?.flow === 'multiple_inputs' && typeof name === 'string' && greeting !== undefined && roots) {
        return text(`name=${name}, greeting=${greeting}, roots=${roots.length}`);
      }
      return inputRequired({
        inputRequests: {
          user_name: askName(),
          greeting: inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }],
            maxTokens: 50
          }),
          client_roots: inputRequired.listRoots()
        },
        requestState: await stateCodec.mint({ flow: 'multiple_inputs' })
      });
    }
  );
  mcp.registerTool(
    'test_input_required_result_multi_round',
    { description: 'Asks for a name, then a colour, then answers', inputSchema: none },
    async (_args, ctx) => {
      const state = ctx.mcpReq.requestState();
      const r = ctx.mcpReq.inputResponses;
      if (state?.flow === 'multi_round' && state.round === 2) {
        const color = accepted(r, 'step2')?.color;
        if (typeof color === 'string') return text(`${state.name} likes ${color}`);
      }
      if (state?.flow === 'multi_round' && state.round === 1) {
        const name = accepted(r, 'step1')?.name;
        if (typeof name === 'string') {
          return inputRequired({
            inputRequests: {
              step2: inputRequired.elicit({
                message: 'Step 2: What is your favorite color?',
                requestedSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] }
              })
            },
            requestState: await stateCodec.mint({ flow: 'multi_round', round: 2, name })
          });
        }
      }
      return inputRequired({
        inputRequests: { step1: askName('Step 1: What is your name?') },
        requestState: await stateCodec.mint({ flow: 'multi_round', round: 1 })
      });
    }
  );
  mcp.registerTool(
    'test_input_required_result_tampered_state',
    { description: 'Seals its requestState; a changed one is refused', inputSchema: none },
    async (_args, ctx) => {
      // a tampered state never gets here: the codec's verify refuses it
      // with -32602 before the handler runs
      const state = ctx.mcpReq.requestState();
      if (state?.flow === 'tampered_state') return text('state-ok');
      return inputRequired({
        inputRequests: { user_name: askName() },
        requestState: await stateCodec.mint({ flow: 'tampered_state' })
      });
    }
  );
  mcp.registerTool(
    'test_input_required_result_capabilities',
    { description: "Asks only for what the client's capabilities allow", inputSchema: none },
    async (_args, ctx) => {
      const caps = ctx.mcpReq.envelope?.[CLIENT_CAPABILITIES_META_KEY] ?? {};
      const r = ctx.mcpReq.inputResponses;
      const wanted = {};
      if (caps.elicitation && accepted(r, 'user_name') === undefined) wanted.user_name = askName();
      if (caps.sampling && sampled(r?.greeting) === undefined) {
        wanted.greeting = inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }],
          maxTokens: 50
        });
      }
      if (caps.roots && rooted(r?.client_roots) === undefined) wanted.client_roots = inputRequired.listRoots();
      if (Object.keys(wanted).length > 0) return inputRequired({ inputRequests: wanted });
      return text('Nothing more to ask for the declared capabilities');
    }
  );

  mcp.registerResource(
    'static-text',
    'test://static-text',
    { description: 'A fixed text', mimeType: 'text/plain' },
    async (uri) => ({
      contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }]
    })
  );
  mcp.registerResource(
    'static-binary',
    'test://static-binary',
    { description: 'A fixed PNG', mimeType: 'image/png' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'image/png', blob: PNG }] })
  );
  mcp.registerResource(
    'template-data',
    new ResourceTemplate('test://template/{id}/data', { list: undefined }),
    { description: 'Data for an id', mimeType: 'application/json' },
    async (uri, { id }) => ({
      contents: [
        {
          uri: uri.href,
          mimeType: 'application/json',
          text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` })
        }
      ]
    })
  );

  mcp.registerPrompt('test_simple_prompt', { description: 'A prompt without arguments' }, async () => ({
    messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }]
  }));
  mcp.registerPrompt(
    'test_prompt_with_arguments',
    {
      description: 'A prompt with two arguments',
      argsSchema: z.object({
        arg1: completable(z.string().describe('First test argument'), (v) =>
          ['paris', 'park', 'party'].filter((w) => w.startsWith(v))
        ),
        arg2: z.string().describe('Second test argument')
      })
    },
    async ({ arg1, arg2 }) => ({
      messages: [
        { role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }
      ]
    })
  );
  mcp.registerPrompt(
    'test_prompt_with_embedded_resource',
    { description: 'A prompt that embeds a resource', argsSchema: z.object({ resourceUri: z.string() }) },
    async ({ resourceUri }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'resource',
            resource: { uri: resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' }
          }
        },
        { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } }
      ]
    })
  );
  mcp.registerPrompt('test_prompt_with_image', { description: 'A prompt with an image' }, async () => ({
    messages: [
      { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
      { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } }
    ]
  }));
  mcp.registerPrompt(
    'test_input_required_result_prompt',
    { description: 'Asks for the context before it is given' },
    async (ctx) => {
      const context = accepted(ctx.mcpReq.inputResponses, 'user_context')?.context;
      if (typeof context !== 'string') {
        return inputRequired({
          inputRequests: {
            user_context: inputRequired.elicit({
              message: 'What context should the prompt use?',
              requestedSchema: { type: 'object', properties: { context: { type: 'string' } }, required: ['context'] }
            })
          }
        });
      }
      return { messages: [{ role: 'user', content: { type: 'text', text: `Use this context: ${context}` } }] };
    }
  );
  return mcp;
}

// a resource the server does not have is -32602 with the uri in data
// (sep-2164): the SDK's own answer for an unknown uri; ResourceNotFoundError
// is named here so that a change of the SDK's default shows in a review
void ResourceNotFoundError;

const httpAt = process.argv.indexOf('--http');
if (httpAt < 0) {
  // the SDK's stdio entry: the opening message decides the era (mcpgate's
  // server/discover: 2026-07-28), one server for the connection; a plain
  // connect() would serve 2025-11-25 only, the input_required results turned
  // into requests to the client by the SDK's legacy shim
  serveStdio(() => makeServer(), { onerror: (e) => console.error('fixture-server-2026:', e.message) });
} else {
  const port = Number(process.argv[httpAt + 1]);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`fixture-server-2026: --http needs a port (0-65535), not '${process.argv[httpAt + 1] ?? ''}'`);
    process.exit(2);
  }
  const handler = createMcpHandler(() => makeServer());
  announce = handler.notify;
  const http = createServer(async (req, res) => {
    try {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      const body = Buffer.concat(chunks);
      const headers = new Headers();
      for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
      const request = new Request(`http://${req.headers.host ?? '127.0.0.1'}${req.url}`, {
        method: req.method,
        headers,
        body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body
      });
      const response =
        hostHeaderValidationResponse(request, localhostAllowedHostnames()) ??
        originValidationResponse(request, localhostAllowedOrigins()) ??
        (new URL(request.url).pathname === '/mcp' ? await handler.fetch(request) : new Response('not found', { status: 404 }));
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (response.body) {
        for await (const c of response.body) res.write(c);
      }
      res.end();
    } catch (e) {
      console.error('fixture-server-2026:', e);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    }
  });
  http.listen(port, '127.0.0.1', () => {
    console.error(`fixture-server-2026: listening on http://127.0.0.1:${http.address().port}/mcp`);
  });
}
