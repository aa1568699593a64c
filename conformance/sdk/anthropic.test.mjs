// The mock in Anthropic's dialect, through the official `@anthropic-ai/sdk`:
// each fault and feature must come out as the SDK makes it out of the real API.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { startMock } from './mock.mjs';

const KEY = 'sk-ant-conformance-0123456789';

async function client(args = [], options = {}) {
  const mock = await startMock(...args);
  return new Anthropic({ baseURL: mock.anthropic, apiKey: KEY, maxRetries: 0, ...options });
}

const ask = (content, extra = {}) => ({ model: 'mock-echo', max_tokens: 200, messages: [{ role: 'user', content }], ...extra });

async function rejects(p) {
  try {
    await p;
  } catch (err) {
    return err;
  }
  assert.fail('want an error, the call succeeded');
}

test('a message comes back parsed, with every rate-limit header and a request id', async () => {
  const c = await client();
  const { data, response } = await c.messages.create({ ...ask('hello there'), system: 'be brief' }).withResponse();
  assert.deepEqual(data.content, [{ type: 'text', text: 'hello there' }]);
  assert.equal(data.stop_reason, 'end_turn');
  assert.ok(data.usage.input_tokens > 0 && data.usage.output_tokens > 0);
  assert.ok(data._request_id.startsWith('req_mock'));
  for (const what of ['requests', 'tokens', 'input-tokens', 'output-tokens']) {
    for (const part of ['limit', 'remaining', 'reset']) {
      assert.ok(response.headers.get(`anthropic-ratelimit-${what}-${part}`), `no anthropic-ratelimit-${what}-${part}`);
    }
  }
  assert.ok(!Number.isNaN(Date.parse(response.headers.get('anthropic-ratelimit-requests-reset'))), 'reset is not RFC 3339');
});

const errorCases = [
  { name: 'overloaded', args: ['--overloaded', '1'], cls: Anthropic.OverloadedError, status: 529, type: 'overloaded_error' },
  { name: 'rate limit fault', args: ['--rate-limit', '1'], cls: Anthropic.RateLimitError, status: 429, type: 'rate_limit_error', header: ['x-should-retry', 'true'] },
  { name: 'server error', args: ['--server-error', '1'], cls: Anthropic.InternalServerError, status: 500, type: 'api_error' },
  { name: 'wrong key', args: ['--auth', '1'], cls: Anthropic.AuthenticationError, status: 401, type: 'authentication_error' },
  { name: 'credit balance too low', args: ['--quota', '1'], cls: Anthropic.BadRequestError, status: 400, type: 'invalid_request_error', message: /credit balance is too low/ },
  { name: 'spend limit', args: ['--spend-limit', '1'], cls: Anthropic.RateLimitError, status: 429, type: 'rate_limit_error', message: /spend limit/ },
  { name: 'payment required', args: ['--payment-required', '1'], cls: Anthropic.PaymentRequiredError, status: 402, type: 'billing_error' },
  { name: 'forbidden', args: ['--forbidden', '1'], cls: Anthropic.PermissionDeniedError, status: 403, type: 'permission_error' },
  { name: 'request too large (413)', args: ['--too-large', '1'], cls: Anthropic.ContentTooLargeError, status: 413, type: 'request_too_large' },
  { name: 'context length', args: ['--context-length', '1'], cls: Anthropic.BadRequestError, status: 400, type: 'invalid_request_error', message: /prompt is too long/ },
];
for (const tc of errorCases) {
  test(`${tc.name} is ${tc.cls.name} ${tc.status}`, async () => {
    const c = await client(tc.args);
    const err = await rejects(c.messages.create(ask('hi')));
    assert.ok(err instanceof tc.cls, `got ${err.constructor.name}: ${err.message}`);
    assert.equal(err.status, tc.status);
    assert.equal(err.error?.error?.type, tc.type);
    if (tc.message) assert.match(err.message, tc.message);
    if (tc.header) assert.equal(err.headers.get(tc.header[0]), tc.header[1]);
    assert.ok(err.requestID?.startsWith('req_mock'), 'no request id');
  });
}

test('validation: the real API\'s 400s and 404s', async () => {
  const c = await client();
  const cases = [
    [{ model: 'mock-echo', messages: [{ role: 'user', content: 'hi' }] }, Anthropic.BadRequestError, /max_tokens: Field required/],
    [{ ...ask('hi'), temperature: 1.5 }, Anthropic.BadRequestError, /temperature/],
    [{ ...ask('hi'), messages: [] }, Anthropic.BadRequestError, /at least one message/],
    [{ ...ask('hi'), model: 'claude-9' }, Anthropic.NotFoundError, /model: claude-9/],
  ];
  for (const [params, cls, msg] of cases) {
    const err = await rejects(c.messages.create(params));
    assert.ok(err instanceof cls, `${JSON.stringify(params)}: got ${err.constructor.name}`);
    assert.match(err.message, msg);
  }
  const err = await rejects(c.post('/v1/no-such-route', { body: {} }));
  assert.ok(err instanceof Anthropic.NotFoundError);
});

test('a 429 from the limit says when to retry, and the SDK retries then', async () => {
  const mock = await startMock('--rpm', '60');
  const c = new Anthropic({ baseURL: mock.anthropic, apiKey: KEY, maxRetries: 0 });
  let err;
  for (let i = 0; i < 200 && !err; i++) {
    try {
      await c.messages.create(ask('hi'));
    } catch (e) {
      err = e;
    }
  }
  assert.ok(err instanceof Anthropic.RateLimitError, `got ${err?.constructor.name}`);
  assert.equal(err.headers.get('retry-after'), '1');
  assert.equal(err.headers.get('x-should-retry'), 'true');
  const patient = new Anthropic({ baseURL: mock.anthropic, apiKey: KEY, maxRetries: 2 });
  const r = await patient.messages.create(ask('again'));
  assert.equal(r.content[0].text, 'again');
});

test('a request larger than the whole token limit can never succeed', async () => {
  const c = await client(['--tpm', '50'], { maxRetries: 2 });
  const err = await rejects(c.messages.create(ask('hi')));
  assert.ok(err instanceof Anthropic.RateLimitError);
  assert.match(err.message, /Request too large/);
  assert.equal(err.headers.get('x-should-retry'), 'false');
});

test('a reset is an APIConnectionError; a hung request an APIConnectionTimeoutError', async () => {
  let err = await rejects((await client(['--reset', '1'])).messages.create(ask('hi')));
  assert.ok(err instanceof Anthropic.APIConnectionError, `got ${err.constructor.name}`);
  err = await rejects((await client(['--timeout', '1'], { timeout: 300 })).messages.create(ask('hi')));
  assert.ok(err instanceof Anthropic.APIConnectionTimeoutError, `got ${err.constructor.name}`);
});

test('a connection cut mid-body fails as a cut connection, not as bad JSON', async () => {
  const err = await rejects((await client(['--malformed', '1'])).messages.create(ask('hello there, a long enough answer')));
  assert.ok(!(err instanceof SyntaxError), `a cut body must not look like invalid JSON: ${err}`);
  assert.match(String(err.message) + String(err.cause ?? ''), /terminated|aborted|socket|Connection error/i);
});

test('a stream yields its events and a final message', async () => {
  const c = await client();
  const stream = c.messages.stream(ask('one two three four'));
  let text = '';
  stream.on('text', (t) => { text += t; });
  const msg = await stream.finalMessage();
  assert.equal(text, 'one two three four');
  assert.equal(msg.stop_reason, 'end_turn');
  assert.ok(msg.usage.output_tokens > 0);
  const raw = await c.messages.create({ ...ask('one two'), stream: true });
  const types = [];
  for await (const ev of raw) types.push(ev.type);
  assert.deepEqual(types, ['message_start', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
});

test('faults mid-stream: an overloaded_error event throws, a cut stream throws', async () => {
  for (const args of [['--overloaded', '1'], ['--malformed', '1']]) {
    const c = await client(args);
    const raw = await c.messages.create({ ...ask('one two three four five six'), stream: true });
    let events = 0;
    const err = await rejects((async () => { for await (const _ of raw) events++; })());
    assert.ok(events > 0, `${args}: failed before any event`);
    if (args[0] === '--overloaded') {
      assert.ok(err instanceof Anthropic.APIError, `got ${err.constructor.name}`);
      assert.match(err.message, /overloaded_error|Overloaded/);
    }
  }
});

const weather = {
  type: 'object',
  properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1, maximum: 7 }, unit: { type: 'string', enum: ['c', 'f'] } },
  required: ['city', 'days', 'unit'],
  additionalProperties: false,
};

test('tool_choice any calls the tool with input that fits its schema', async () => {
  const c = await client();
  const r = await c.messages.create({ ...ask('Paris'), tools: [{ name: 'weather', input_schema: weather }], tool_choice: { type: 'any' } });
  assert.equal(r.stop_reason, 'tool_use');
  const use = r.content.find((b) => b.type === 'tool_use');
  assert.equal(use.name, 'weather');
  assert.deepEqual(use.input, { city: 'Paris', days: 5, unit: 'c' });
});

test('structured output parses into the schema; invalid output breaks it', async () => {
  const params = { ...ask('Lima'), output_config: { format: { type: 'json_schema', schema: weather } } };
  const r = await (await client()).messages.parse(params);
  assert.deepEqual(r.parsed_output, { city: 'Lima', days: 4, unit: 'c' });
  const bad = await client(['--invalid-output', '1']);
  const outcomes = [];
  for (let i = 0; i < 2; i++) {
    try {
      const m = await bad.messages.parse(params);
      outcomes.push(m.parsed_output?.city === undefined ? 'missing field' : 'valid');
    } catch (e) {
      outcomes.push('unparsable');
    }
  }
  assert.deepEqual(outcomes.sort(), ['missing field', 'unparsable']);
});

test('refusal and truncation stop reasons', async () => {
  const refused = await (await client(['--refusal', '1'])).messages.create(ask('hi'));
  assert.equal(refused.stop_reason, 'refusal');
  // A refusal says why in stop_details, as the API's does; tenax reads
  // its explanation as the refusal's words.
  assert.equal(refused.stop_details.type, 'refusal');
  assert.ok(refused.stop_details.explanation.length > 0, 'stop_details.explanation is empty');
  assert.ok('category' in refused.stop_details, 'stop_details has no category');
  const streamed = await (await client(['--refusal', '1'])).messages.stream(ask('hi')).finalMessage();
  assert.equal(streamed.stop_reason, 'refusal');
  assert.equal(streamed.stop_details?.type, 'refusal', 'a streamed refusal lost its stop_details');
  const fine = await (await client()).messages.create(ask('hi'));
  assert.equal(fine.stop_details, null);
  const cut = await (await client(['--truncated', '1'])).messages.create(ask('hello world'));
  assert.equal(cut.stop_reason, 'max_tokens');
  assert.ok(cut.content[0].text.length < 'hello world'.length);
});

test('count_tokens and models', async () => {
  const c = await client();
  const n = await c.messages.countTokens({ model: 'mock-echo', system: 'abcd', messages: [{ role: 'user', content: 'abcdefgh' }] });
  assert.deepEqual(n, { input_tokens: 3 });
  const ids = [];
  for await (const m of c.models.list()) ids.push(m.id);
  assert.deepEqual(ids, ['mock-echo', 'mock-json', 'mock-agent']);
});

// mock-agent's tool_use blocks parse in the SDK, and tool_result blocks
// sent back carry the conversation to the final answer.
test('mock-agent: a tool_use round trip to the final answer', async () => {
  const c = await client();
  const tools = [{ name: 'lookup', input_schema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } }];
  const messages = [{ role: 'user', content: 'find the harbor' }];
  let calls = 0;
  for (let step = 0; step < 6; step++) {
    const msg = await c.messages.create({ model: 'mock-agent', max_tokens: 200, messages, tools });
    const uses = msg.content.filter((b) => b.type === 'tool_use');
    if (msg.stop_reason !== 'tool_use') {
      assert.equal(msg.stop_reason, 'end_turn');
      assert.equal(msg.content.find((b) => b.type === 'text').text, 'find the harbor');
      assert.ok(calls > 0, 'the agent answered without calling a tool');
      return;
    }
    assert.ok(uses.length > 0);
    messages.push({ role: 'assistant', content: msg.content });
    messages.push({ role: 'user', content: uses.map((u) => ({ type: 'tool_result', tool_use_id: u.id, content: `result of ${u.name}` })) });
    calls += uses.length;
  }
  assert.fail('no final answer within 6 steps');
});
