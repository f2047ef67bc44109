// The server behind mcpgate in the conformance suite's server scenarios
// (tests/integration/conformance_server_test.py): an MCP server on stdio
// with the tools, resources and prompts those scenarios call by name, each
// answering what the scenario's description asks for. Written here from
// those descriptions: the suite's own example server is only in the suite's
// source repository (not in its npm package, so not where CI can install
// it), and it speaks only HTTP. This one runs contained, in an image built by
// tests/conformance/build-fixture-image.sh, with no network.
//
// It uses the TypeScript SDK the suite itself depends on (pinned by
// tests/conformance/package-lock.json), at /app/node_modules in the image.
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { completable } from '@modelcontextprotocol/sdk/server/completable.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

// a 1x1 PNG (one blue pixel) and a 16-bit mono WAV of one silent sample,
// both made for these tests
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mNQSDgAAAHkAUGi6zIMAAAAAElFTkSuQmCC';
const WAV = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA==';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const mcp = new McpServer(
  { name: 'mcpgate-conformance-fixture', version: '1.0.0' },
  {
    capabilities: {
      tools: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
      prompts: { listChanged: true },
      logging: {},
      completions: {}
    }
  }
);
const server = mcp.server;
const text = (t) => ({ content: [{ type: 'text', text: t }] });

mcp.registerTool('test_simple_text', { description: 'Answers one text item' }, async () =>
  text('This is a simple text response for testing.')
);
mcp.registerTool('test_image_content', { description: 'Answers one PNG image' }, async () => ({
  content: [{ type: 'image', data: PNG, mimeType: 'image/png' }]
}));
mcp.registerTool('test_audio_content', { description: 'Answers one WAV clip' }, async () => ({
  content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }]
}));
mcp.registerTool('test_embedded_resource', { description: 'Answers an embedded resource' }, async () => ({
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
}));
mcp.registerTool('test_multiple_content_types', { description: 'Answers text, an image and a resource' }, async () => ({
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
}));
mcp.registerTool('test_tool_with_logging', { description: 'Logs three messages while it runs' }, async (extra) => {
  const log = (data) =>
    extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data } });
  await log('Tool execution started');
  await sleep(50);
  await log('Tool processing data');
  await sleep(50);
  await log('Tool execution completed');
  return text('Logged three messages');
});
mcp.registerTool('test_tool_with_progress', { description: 'Reports progress 0, 50 and 100 of 100' }, async (extra) => {
  const token = extra._meta?.progressToken;
  for (const progress of [0, 50, 100]) {
    if (token !== undefined) {
      await extra.sendNotification({
        method: 'notifications/progress',
        params: { progressToken: token, progress, total: 100 }
      });
    }
    if (progress < 100) await sleep(50);
  }
  return text('Progress reported');
});
mcp.registerTool('test_error_handling', { description: 'Always fails' }, async () => ({
  isError: true,
  content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }]
}));
mcp.registerTool(
  'test_sampling',
  { description: "Asks the client's model", inputSchema: { prompt: z.string() } },
  async ({ prompt }) => {
    const answer = await server.createMessage({
      messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
      maxTokens: 100
    });
    const said = answer.content?.type === 'text' ? answer.content.text : JSON.stringify(answer.content);
    return text('LLM response: ' + said);
  }
);
mcp.registerTool(
  'test_elicitation',
  { description: 'Asks the person for a name and an email', inputSchema: { message: z.string() } },
  async ({ message }) => {
    const answer = await server.elicitInput({
      message,
      requestedSchema: {
        type: 'object',
        properties: {
          username: { type: 'string', description: "User's response" },
          email: { type: 'string', description: "User's email address" }
        },
        required: ['username', 'email']
      }
    });
    return text('User response: ' + JSON.stringify(answer));
  }
);
const elicited = (answer) =>
  text(`Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`);
mcp.registerTool('test_elicitation_sep1034_defaults', { description: 'Asks with a default for each type' }, async () =>
  elicited(
    await server.elicitInput({
      message: 'Check the values, each has a default',
      requestedSchema: {
        type: 'object',
        properties: {
          name: { type: 'string', default: 'John Doe' },
          age: { type: 'integer', default: 30 },
          score: { type: 'number', default: 95.5 },
          status: { type: 'string', enum: ['active', 'inactive', 'pending'], default: 'active' },
          verified: { type: 'boolean', default: true }
        }
      }
    })
  )
);
mcp.registerTool('test_elicitation_sep1330_enums', { description: 'Asks with each form of enum' }, async () =>
  elicited(
    await server.elicitInput({
      message: 'Pick from each list',
      requestedSchema: {
        type: 'object',
        properties: {
          untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
          titledSingle: {
            type: 'string',
            oneOf: [
              { const: 'value1', title: 'First Option' },
              { const: 'value2', title: 'Second Option' },
              { const: 'value3', title: 'Third Option' }
            ]
          },
          legacyEnum: {
            type: 'string',
            enum: ['opt1', 'opt2', 'opt3'],
            enumNames: ['Option One', 'Option Two', 'Option Three']
          },
          untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
          titledMulti: {
            type: 'array',
            items: {
              anyOf: [
                { const: 'value1', title: 'First Choice' },
                { const: 'value2', title: 'Second Choice' },
                { const: 'value3', title: 'Third Choice' }
              ]
            }
          }
        }
      }
    })
  )
);

// a tool whose inputSchema is kept exactly as written (2020-12 keywords):
// the high-level API would rebuild it from zod, so this one list is answered
// by hand, the registered tools first
const rawSchemaTool = {
  name: 'json_schema_2020_12_tool',
  description: 'Tool with JSON Schema 2020-12 features',
  inputSchema: {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    $defs: {
      address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } }
    },
    properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
    additionalProperties: false
  }
};

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
  'watched-resource',
  'test://watched-resource',
  { description: 'A resource one can subscribe to', mimeType: 'text/plain' },
  async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'Watched resource content' }] })
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
    argsSchema: {
      arg1: completable(z.string().describe('First test argument'), (v) =>
        ['paris', 'park', 'party'].filter((w) => w.startsWith(v))
      ),
      arg2: z.string().describe('Second test argument')
    }
  },
  async ({ arg1, arg2 }) => ({
    messages: [
      { role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }
    ]
  })
);
mcp.registerPrompt(
  'test_prompt_with_embedded_resource',
  { description: 'A prompt that embeds a resource', argsSchema: { resourceUri: z.string() } },
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

// subscriptions: kept and answered {}; the resource never changes, so
// nothing is ever sent for it
const subscribed = new Set();
server.setRequestHandler(SubscribeRequestSchema, async (req) => {
  subscribed.add(req.params.uri);
  return {};
});
server.setRequestHandler(UnsubscribeRequestSchema, async (req) => {
  subscribed.delete(req.params.uri);
  return {};
});
// (the SDK keeps its handlers in this map; the fixture pins the SDK's version)
const listTools = server._requestHandlers.get('tools/list');
server.setRequestHandler(ListToolsRequestSchema, async (req, extra) => {
  const listed = await listTools(req, extra);
  return { ...listed, tools: [...listed.tools, rawSchemaTool] };
});
const callTool = server._requestHandlers.get('tools/call');
server.setRequestHandler(CallToolRequestSchema, async (req, extra) =>
  req.params.name === rawSchemaTool.name
    ? text('Called with ' + JSON.stringify(req.params.arguments ?? {}))
    : callTool(req, extra)
);
await mcp.connect(new StdioServerTransport());
