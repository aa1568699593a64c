// The mock in Bedrock's dialect, through the official
// `@aws-sdk/client-bedrock-runtime`: ConverseCommand signed with SigV4 as
// at AWS, each fault coming out as the SDK makes it out of the real API.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  BedrockRuntimeClient,
  ConverseCommand,
  ThrottlingException,
  ValidationException,
  ServiceUnavailableException,
  InternalServerException,
  ModelNotReadyException,
  ModelTimeoutException,
  AccessDeniedException,
  ResourceNotFoundException,
} from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { startMock } from './mock.mjs';

// Static credentials: the mock reads the access key id, not the signature.
const credentials = { accessKeyId: 'AKIAMOCKCONFORMANCE0', secretAccessKey: 'mock-secret-access-key' };

async function client(args = []) {
  const mock = await startMock(...args);
  // HTTP/1.1: the client's default handler speaks HTTP/2 (for the
  // bidirectional stream), which real Bedrock offers over TLS and the
  // plain-HTTP mock does not.
  return new BedrockRuntimeClient({
    region: 'us-east-1', endpoint: mock.bedrock, credentials, maxAttempts: 1, requestHandler: new NodeHttpHandler(),
  });
}

const ask = (text, extra = {}) => new ConverseCommand({
  modelId: 'mock-echo',
  messages: [{ role: 'user', content: [{ text }] }],
  inferenceConfig: { maxTokens: 200 },
  ...extra,
});

async function rejects(p) {
  try {
    await p;
  } catch (err) {
    return err;
  }
  assert.fail('want an error, the call succeeded');
}

test('a converse answer comes back parsed, with usage, stop reason, metrics and a request id', async () => {
  const c = await client();
  const out = await c.send(ask('hello there', { system: [{ text: 'be brief' }] }));
  assert.deepEqual(out.output.message.content, [{ text: 'hello there' }]);
  assert.equal(out.output.message.role, 'assistant');
  assert.equal(out.stopReason, 'end_turn');
  assert.ok(out.usage.inputTokens > 0 && out.usage.outputTokens > 0);
  assert.equal(out.usage.totalTokens, out.usage.inputTokens + out.usage.outputTokens);
  assert.ok(out.metrics.latencyMs >= 0);
  assert.equal(out.$metadata.httpStatusCode, 200);
  assert.ok(out.$metadata.requestId, 'no x-amzn-RequestId');
});

test('a model id the mock does not serve (colon and all) is ResourceNotFoundException 404', async () => {
  const c = await client();
  const err = await rejects(c.send(ask('hi', { modelId: 'anthropic.claude-3-5-haiku-20241022-v1:0' })));
  assert.ok(err instanceof ResourceNotFoundException, `got ${err.name}: ${err.message}`);
  assert.equal(err.$metadata.httpStatusCode, 404);
});

const stopCases = [
  { name: 'max_tokens', args: ['--truncated', '1'], stop: 'max_tokens' },
  { name: 'guardrail_intervened', args: ['--refusal', '1'], stop: 'guardrail_intervened', text: 'Sorry, the model cannot answer this question.' },
  { name: 'content_filtered', args: ['--content-filter', '1'], stop: 'content_filtered' },
];
for (const tc of stopCases) {
  test(`stopReason ${tc.name}`, async () => {
    const c = await client(tc.args);
    const out = await c.send(ask('tell me a long story about the sea'));
    assert.equal(out.stopReason, tc.stop);
    if (tc.text) assert.equal(out.output.message.content[0].text, tc.text);
  });
}

test('a forced tool is called with input shaped by its schema', async () => {
  const c = await client();
  const out = await c.send(ask('translate hi', {
    toolConfig: {
      tools: [{ toolSpec: { name: 'output', inputSchema: { json: { type: 'object', properties: { es: { type: 'string' } }, required: ['es'] } } } }],
      toolChoice: { tool: { name: 'output' } },
    },
  }));
  assert.equal(out.stopReason, 'tool_use');
  const use = out.output.message.content.find((b) => b.toolUse).toolUse;
  assert.equal(use.name, 'output');
  assert.equal(typeof use.input.es, 'string');
});

const errorCases = [
  { name: 'throttling', args: ['--rate-limit', '1'], cls: ThrottlingException, status: 429 },
  { name: 'service unavailable', args: ['--overloaded', '1'], cls: ServiceUnavailableException, status: 503 },
  { name: 'internal server error', args: ['--server-error', '1'], cls: InternalServerException, status: 500 },
  { name: 'model not ready', args: ['--model-not-ready', '1'], cls: ModelNotReadyException, status: 429 },
  { name: 'model timeout', args: ['--model-timeout', '1'], cls: ModelTimeoutException, status: 408 },
  { name: 'access denied', args: ['--forbidden', '1'], cls: AccessDeniedException, status: 403 },
  { name: 'input too long', args: ['--context-length', '1'], cls: ValidationException, status: 400, message: /Input is too long for requested model/ },
  { name: 'unrecognized client', args: ['--auth', '1'], name2: 'UnrecognizedClientException', status: 403 },
];
for (const tc of errorCases) {
  test(`${tc.name} is ${tc.cls?.name ?? tc.name2} ${tc.status}`, async () => {
    const c = await client(tc.args);
    const err = await rejects(c.send(ask('hi')));
    if (tc.cls) assert.ok(err instanceof tc.cls, `got ${err.name}: ${err.message}`);
    assert.equal(err.name, tc.cls?.name ?? tc.name2);
    assert.equal(err.$metadata.httpStatusCode, tc.status);
    assert.equal(err.$metadata.attempts, 1, 'the SDK retried though maxAttempts is 1');
    assert.ok(err.message.length > 0, 'no message');
    if (tc.message) assert.match(err.message, tc.message);
  });
}

test('a conversation that does not start with a user message is a ValidationException', async () => {
  const c = await client();
  const err = await rejects(c.send(new ConverseCommand({
    modelId: 'mock-echo',
    messages: [{ role: 'assistant', content: [{ text: 'hi' }] }],
  })));
  assert.ok(err instanceof ValidationException, `got ${err.name}: ${err.message}`);
  assert.equal(err.$metadata.httpStatusCode, 400);
  assert.match(err.message, /must start with a user message/);
});

// An agent's tools, as tenax sends them: the model's choice (auto), with
// a schema's output tool last among them.
const searchSpec = { toolSpec: { name: 'search', description: 'finds things', inputSchema: { json: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } } } };
const outputSpec = { toolSpec: { name: 'output', description: 'Give the final answer', inputSchema: { json: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] } } } };
const agentAsk = (messages, tools) => new ConverseCommand({
  modelId: 'mock-agent',
  messages,
  inferenceConfig: { maxTokens: 500 },
  toolConfig: { tools, toolChoice: { auto: {} } },
});

// plays runs a mock-agent conversation to its end through the SDK: every
// toolUse gets a toolResult (an error's status "error" for the unknown
// tool), as tenax answers them. It returns the last answer and the number
// of tool-calling turns.
async function plays(c, question, tools) {
  const messages = [{ role: 'user', content: [{ text: question }] }];
  for (let turn = 0; turn < 10; turn++) {
    const out = await c.send(agentAsk(messages, tools));
    const uses = out.output.message.content.filter((b) => b.toolUse).map((b) => b.toolUse);
    const own = uses.filter((u) => u.name !== 'output');
    if (out.stopReason !== 'tool_use' || own.length === 0) return { out, turns: turn };
    assert.ok(own.length === uses.length, `${question}: the output tool called as a step, beside ${own.map((u) => u.name)}`);
    assert.equal(out.output.message.role, 'assistant');
    messages.push(out.output.message);
    messages.push({
      role: 'user',
      content: uses.map((u) => ({
        toolResult: u.name === 'search'
          ? { toolUseId: u.toolUseId, content: [{ text: `found ${u.input.query}` }] }
          : { toolUseId: u.toolUseId, content: [{ text: `unknown tool ${u.name}` }], status: 'error' },
      })),
    });
  }
  assert.fail(`${question}: no final answer in 10 turns`);
}

test('an agent round trip: toolUse blocks answered by toolResult blocks, then a text answer', async () => {
  const c = await client();
  const { out, turns } = await plays(c, 'look up the sea', [searchSpec]);
  assert.ok(turns >= 1, 'the agent called no tool');
  assert.equal(out.stopReason, 'end_turn');
  assert.equal(out.output.message.content.find((b) => b.text)?.text, 'look up the sea');
});

test('an agent with an output tool ends by calling it, never calling it as a step', async () => {
  const c = await client();
  let byTool = 0;
  for (let i = 0; i < 10; i++) {
    const { out, turns } = await plays(c, `look up item ${i}`, [searchSpec, outputSpec]);
    assert.ok(turns >= 1, `item ${i}: the agent called no tool before answering`);
    const use = out.output.message.content.find((b) => b.toolUse)?.toolUse;
    if (!use) continue; // the mock's slip: a final answer in text
    byTool++;
    assert.equal(out.stopReason, 'tool_use');
    assert.equal(use.name, 'output');
    assert.deepEqual(use.input, { answer: `look up item ${i}` });
  }
  assert.ok(byTool >= 7, `${byTool} of 10 conversations ended with the output tool, want most`);
});

test('a toolUse left without its toolResult is a ValidationException', async () => {
  const c = await client();
  const first = await c.send(agentAsk([{ role: 'user', content: [{ text: 'look up the moon' }] }], [searchSpec]));
  assert.equal(first.stopReason, 'tool_use');
  const err = await rejects(c.send(agentAsk([
    { role: 'user', content: [{ text: 'look up the moon' }] },
    first.output.message,
    { role: 'user', content: [{ text: 'go on' }] },
  ], [searchSpec])));
  assert.ok(err instanceof ValidationException, `got ${err.name}: ${err.message}`);
  assert.match(err.message, /toolResult/);
});
