// The mock in OpenAI's dialect, through the official `openai` SDK: each
// fault and feature must come out as the SDK makes it out of the real API.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { AzureOpenAI } from 'openai';
import { LengthFinishReasonError, ContentFilterFinishReasonError } from 'openai/error';
import { startMock } from './mock.mjs';

const KEY = 'sk-conformance-0123456789abcdef';

async function client(args = [], options = {}) {
  const mock = await startMock(...args);
  return new OpenAI({ baseURL: mock.openai, apiKey: KEY, maxRetries: 0, ...options });
}

const ask = (content, extra = {}) => ({ model: 'mock-echo', messages: [{ role: 'user', content }], ...extra });

// rejects awaits p and returns the error it rejects with.
async function rejects(p) {
  try {
    await p;
  } catch (err) {
    return err;
  }
  assert.fail('want an error, the call succeeded');
}

test('a completion comes back parsed, with the rate-limit headers and a request id', async () => {
  const c = await client();
  const { data, response } = await c.chat.completions.create(ask('hello there')).withResponse();
  assert.equal(data.choices[0].message.content, 'hello there');
  assert.equal(data.choices[0].finish_reason, 'stop');
  assert.equal(data.object, 'chat.completion');
  assert.ok(data.usage.total_tokens > 0);
  assert.ok(data._request_id.startsWith('req_mock'));
  for (const h of ['x-ratelimit-limit-requests', 'x-ratelimit-remaining-tokens', 'x-ratelimit-reset-requests']) {
    assert.ok(response.headers.get(h), `no ${h}`);
  }
});

test('mock-json answers its object; json_object with "json" in the messages is served', async () => {
  const c = await client();
  const r = await c.chat.completions.create({ ...ask('Answer in JSON: gato'), model: 'mock-json', response_format: { type: 'json_object' } });
  assert.deepEqual(JSON.parse(r.choices[0].message.content), { text: 'Answer in JSON: gato', length: 20 });
});

const errorCases = [
  { name: 'rate limit fault', args: ['--rate-limit', '1'], cls: OpenAI.RateLimitError, status: 429, code: 'rate_limit_exceeded', header: 'retry-after' },
  { name: 'server error', args: ['--server-error', '1'], cls: OpenAI.InternalServerError, status: 500 },
  { name: 'overloaded', args: ['--overloaded', '1'], cls: OpenAI.InternalServerError, status: 503 },
  { name: 'wrong key', args: ['--auth', '1'], cls: OpenAI.AuthenticationError, status: 401, code: 'invalid_api_key' },
  { name: 'insufficient quota', args: ['--quota', '1'], cls: OpenAI.RateLimitError, status: 429, code: 'insufficient_quota' },
  { name: 'spend limit', args: ['--spend-limit', '1'], cls: OpenAI.RateLimitError, status: 429, code: 'enforced_spend_limit_reached' },
  { name: 'payment required', args: ['--payment-required', '1'], cls: OpenAI.APIError, status: 402 },
  { name: 'forbidden', args: ['--forbidden', '1'], cls: OpenAI.PermissionDeniedError, status: 403 },
  { name: 'request too large (413)', args: ['--too-large', '1'], cls: OpenAI.APIError, status: 413 },
  { name: 'context length', args: ['--context-length', '1'], cls: OpenAI.BadRequestError, status: 400, code: 'context_length_exceeded' },
];
for (const tc of errorCases) {
  test(`${tc.name} is ${tc.cls.name} ${tc.status}`, async () => {
    const c = await client(tc.args);
    const err = await rejects(c.chat.completions.create(ask('hi')));
    assert.ok(err instanceof tc.cls, `got ${err.constructor.name}: ${err.message}`);
    assert.equal(err.status, tc.status);
    if (tc.code) assert.equal(err.code, tc.code);
    if (tc.header) assert.ok(err.headers.get(tc.header), `no ${tc.header}`);
    assert.ok(err.requestID?.startsWith('req_mock'), 'no request id');
  });
}

test('validation: the real API\'s 400s and 404s', async () => {
  const c = await client();
  const cases = [
    [{ ...ask('hi'), response_format: { type: 'json_object' } }, OpenAI.BadRequestError, /must contain the word 'json'/],
    [{ ...ask('hi'), temperature: 3 }, OpenAI.BadRequestError, /decimal above maximum value/],
    [{ model: 'mock-echo', messages: [] }, OpenAI.BadRequestError, /empty array/],
    [{ ...ask('hi'), model: 'gpt-9' }, OpenAI.NotFoundError, /does not exist/],
  ];
  for (const [params, cls, msg] of cases) {
    const err = await rejects(c.chat.completions.create(params));
    assert.ok(err instanceof cls, `${JSON.stringify(params)}: got ${err.constructor.name}`);
    assert.match(err.message, msg);
  }
  const err = await rejects(c.post('/no-such-route', { body: {} }));
  assert.ok(err instanceof OpenAI.NotFoundError);
  assert.match(err.message, /Invalid URL/);
});

test('a 429 from the limit carries the refill time, and the SDK waits it out', async () => {
  // 200 tokens a minute; each call takes 1 prompt token + max_tokens 100.
  const mock = await startMock('--tpm', '200');
  const c = new OpenAI({ baseURL: mock.openai, apiKey: KEY, maxRetries: 0 });
  const call = (client, text) => client.chat.completions.create({ ...ask(text), max_tokens: 100 });
  await call(c, 'hi');
  const err = await rejects(call(c, 'hi'));
  assert.ok(err instanceof OpenAI.RateLimitError);
  assert.equal(err.error.type, 'tokens');
  const ms = Number(err.headers.get('retry-after-ms'));
  assert.ok(ms > 0 && ms <= 600, `retry-after-ms ${ms}: the 2 missing tokens refill in 0.6s at 200 TPM`);
  const patient = new OpenAI({ baseURL: mock.openai, apiKey: KEY, maxRetries: 2 });
  const start = Date.now();
  const r = await call(patient, 'again');
  assert.equal(r.choices[0].message.content, 'again');
  assert.ok(Date.now() - start >= ms - 50, 'the SDK did not wait for retry-after-ms');
});

test('a request larger than the whole TPM limit is "Request too large"', async () => {
  const c = await client(['--tpm', '50']);
  const err = await rejects(c.chat.completions.create({ ...ask('hi'), max_tokens: 100 }));
  assert.ok(err instanceof OpenAI.RateLimitError);
  assert.match(err.message, /Request too large for mock-echo .* on tokens per min/);
  assert.equal(err.headers.get('retry-after'), null);
});

test('a reset is an APIConnectionError; a hung request an APIConnectionTimeoutError', async () => {
  let err = await rejects((await client(['--reset', '1'])).chat.completions.create(ask('hi')));
  assert.ok(err instanceof OpenAI.APIConnectionError, `got ${err.constructor.name}`);
  err = await rejects((await client(['--timeout', '1'], { timeout: 300 })).chat.completions.create(ask('hi')));
  assert.ok(err instanceof OpenAI.APIConnectionTimeoutError, `got ${err.constructor.name}`);
});

test('a connection cut mid-body fails as a cut connection ("terminated"), not as bad JSON', async () => {
  const c = await client(['--malformed', '1']);
  const err = await rejects(c.chat.completions.create(ask('hello there, a long enough answer')));
  assert.ok(!(err instanceof SyntaxError), `a cut body must not look like invalid JSON: ${err}`);
  assert.match(String(err.message) + String(err.cause ?? ''), /terminated|aborted|socket|Connection error/i);
});

test('a stream yields chunks, a finish reason and the usage when asked', async () => {
  const c = await client();
  const stream = await c.chat.completions.create({ ...ask('one two three four'), stream: true, stream_options: { include_usage: true } });
  let text = '', chunks = 0, finish = null, usage = null;
  for await (const chunk of stream) {
    chunks++;
    for (const ch of chunk.choices) {
      text += ch.delta.content ?? '';
      finish = ch.finish_reason ?? finish;
    }
    usage = chunk.usage ?? usage;
  }
  assert.ok(chunks >= 4, `${chunks} chunks`);
  assert.equal(text, 'one two three four');
  assert.equal(finish, 'stop');
  assert.ok(usage?.completion_tokens > 0, 'no usage chunk');
});

test('faults mid-stream: an error event throws, a cut stream throws', async () => {
  for (const args of [['--overloaded', '1'], ['--malformed', '1']]) {
    const c = await client(args);
    const stream = await c.chat.completions.create({ ...ask('one two three four five six'), stream: true });
    let chunks = 0;
    const err = await rejects((async () => { for await (const _ of stream) chunks++; })());
    assert.ok(chunks > 0, `${args}: the stream failed before any chunk`);
    if (args[0] === '--overloaded') {
      assert.ok(err instanceof OpenAI.APIError, `got ${err.constructor.name}`);
      assert.match(err.message, /overloaded/);
    }
  }
});

const weather = {
  type: 'object',
  properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1, maximum: 7 }, unit: { type: 'string', enum: ['c', 'f'] } },
  required: ['city', 'days', 'unit'],
  additionalProperties: false,
};

test('a forced tool is called with arguments that fit its schema', async () => {
  const c = await client();
  const r = await c.chat.completions.create({
    ...ask('Paris'),
    tools: [{ type: 'function', function: { name: 'weather', parameters: weather, strict: true } }],
    tool_choice: { type: 'function', function: { name: 'weather' } },
  });
  const choice = r.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.tool_calls[0].function.name, 'weather');
  assert.deepEqual(JSON.parse(choice.message.tool_calls[0].function.arguments), { city: 'Paris', days: 5, unit: 'c' });
});

const schemaFormat = { type: 'json_schema', json_schema: { name: 'weather', strict: true, schema: weather } };

test('json_schema structured output parses into the schema', async () => {
  const c = await client();
  const r = await c.chat.completions.parse({ ...ask('Lima'), response_format: schemaFormat });
  assert.deepEqual(r.choices[0].message.parsed, { city: 'Lima', days: 4, unit: 'c' });
});

test('structured output faults: truncation, content filter, refusal, invalid output', async () => {
  let err = await rejects((await client(['--truncated', '1'])).chat.completions.parse({ ...ask('Lima'), response_format: schemaFormat }));
  assert.ok(err instanceof LengthFinishReasonError, `got ${err.constructor.name}`);
  err = await rejects((await client(['--content-filter', '1'])).chat.completions.parse({ ...ask('Lima'), response_format: schemaFormat }));
  assert.ok(err instanceof ContentFilterFinishReasonError, `got ${err.constructor.name}`);
  const refused = await (await client(['--refusal', '1'])).chat.completions.parse({ ...ask('Lima'), response_format: schemaFormat });
  assert.ok(refused.choices[0].message.refusal, 'no refusal');
  assert.equal(refused.choices[0].message.parsed, null);
  // Invalid output alternates: an object missing a field (served) and
  // JSON that does not parse (a trailing comma, finish_reason stop).
  const bad = await client(['--invalid-output', '1']);
  const outcomes = [];
  for (let i = 0; i < 2; i++) {
    try {
      const r = await bad.chat.completions.parse({ ...ask('Lima'), response_format: schemaFormat });
      outcomes.push(r.choices[0].message.parsed.city === undefined ? 'missing field' : 'valid');
    } catch (e) {
      outcomes.push(e.constructor.name);
    }
  }
  assert.deepEqual(outcomes.sort(), ['SyntaxError', 'missing field']);
});

test('models are listed', async () => {
  const c = await client();
  const ids = [];
  for await (const m of c.models.list()) ids.push(m.id);
  assert.deepEqual(ids, ['mock-echo', 'mock-json', 'mock-agent']);
  assert.equal((await c.models.retrieve('mock-json')).id, 'mock-json');
});

test('AzureOpenAI reaches a deployment: its path, api-version and api-key header', async () => {
  const mock = await startMock();
  // The mock's root is the resource's endpoint; the deployment names the model.
  const azure = (deployment) => new AzureOpenAI({ endpoint: mock.anthropic, apiKey: KEY, apiVersion: '2024-10-21', deployment, maxRetries: 0 });
  const { data, response } = await azure('mock-echo').chat.completions
    .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello azure' }] }).withResponse();
  assert.equal(data.choices[0].message.content, 'hello azure');
  assert.equal(data.model, 'mock-echo');
  assert.ok(response.headers.get('x-ratelimit-remaining-requests'), 'no rate-limit headers');
  const chunks = [];
  for await (const c of await azure('mock-echo').chat.completions.create({ model: 'x', stream: true, messages: [{ role: 'user', content: 'streamed' }] })) {
    chunks.push(c.choices[0]?.delta?.content ?? '');
  }
  assert.equal(chunks.join(''), 'streamed');
  const err = await rejects(azure('gpt-4o-prod').chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }));
  assert.ok(err instanceof OpenAI.NotFoundError, `got ${err}`);
  assert.equal(err.code, 'DeploymentNotFound');
  const noKey = await rejects(new AzureOpenAI({ endpoint: mock.anthropic, apiKey: 'x', apiVersion: '2024-10-21', deployment: 'mock-echo', maxRetries: 0,
    fetch: (url, init) => { const h = new Headers(init.headers); h.delete('api-key'); return fetch(url, { ...init, headers: h }); } })
    .chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }));
  assert.ok(noKey instanceof OpenAI.AuthenticationError, `got ${noKey}`);
});

// mock-agent's tool calls parse in the SDK, and a conversation that sends
// each call's result back as a tool message goes on to the final answer.
test('mock-agent: a tool-call round trip to the final answer', async () => {
  const c = await client();
  const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } } }];
  const messages = [{ role: 'user', content: 'find the harbor' }];
  let calls = 0;
  for (let step = 0; step < 6; step++) {
    const data = await c.chat.completions.create({ model: 'mock-agent', messages, tools });
    const msg = data.choices[0].message;
    if (data.choices[0].finish_reason !== 'tool_calls') {
      assert.equal(data.choices[0].finish_reason, 'stop');
      assert.equal(msg.content, 'find the harbor');
      assert.ok(calls > 0, 'the agent answered without calling a tool');
      return;
    }
    assert.ok(msg.tool_calls.length > 0);
    messages.push(msg);
    for (const call of msg.tool_calls) {
      calls++;
      assert.equal(call.type, 'function');
      assert.ok(call.id);
      messages.push({ role: 'tool', tool_call_id: call.id, content: `result of ${call.function.name}` });
    }
  }
  assert.fail('no final answer within 6 steps');
});

// Stored chat completions: a completion created with store and metadata
// is listed by its metadata (and model) through the SDK's list, in the
// real list's shape and pages; other metadata lists nothing.
test('stored completions are listed by metadata, in the list shape', async () => {
  const c = await client();
  const created = [];
  for (const step of ['1', '2']) {
    created.push(await c.chat.completions.create({ ...ask(`stored ${step}`), store: true, metadata: { tenax_job: 'j1', tenax_step: step } }));
  }
  await c.chat.completions.create({ ...ask('not stored'), metadata: { tenax_job: 'j1', tenax_step: '3' } });

  const page = await c.chat.completions.list({ metadata: { tenax_job: 'j1', tenax_step: '2' }, model: 'mock-echo' });
  assert.equal(page.data.length, 1);
  assert.equal(page.data[0].id, created[1].id);
  assert.equal(page.data[0].object, 'chat.completion');
  assert.deepEqual(page.data[0].metadata, { tenax_job: 'j1', tenax_step: '2' });
  assert.equal(page.data[0].choices[0].message.content, 'stored 2');
  assert.equal(page.hasNextPage(), false);

  const raw = await (await c.chat.completions.list({ metadata: { tenax_job: 'j1' }, limit: 1 }).asResponse()).json();
  assert.equal(raw.object, 'list');
  assert.equal(raw.first_id, created[0].id);
  assert.equal(raw.last_id, created[0].id);
  assert.equal(raw.has_more, true);

  const all = [];
  for await (const s of c.chat.completions.list({ metadata: { tenax_job: 'j1' }, limit: 1 })) all.push(s.id);
  assert.deepEqual(all, created.map((x) => x.id), 'the pages (after=last_id) hold both stored completions, the unstored one in none');

  const none = await c.chat.completions.list({ metadata: { tenax_job: 'j2' } });
  assert.equal(none.data.length, 0);
});

// Azure's stored completions: created at a deployment, listed at the
// resource's /openai/chat/completions, as AzureOpenAI sends the list.
test('AzureOpenAI lists stored completions at the resource', async () => {
  const mock = await startMock();
  const azure = new AzureOpenAI({ endpoint: mock.anthropic, apiKey: KEY, apiVersion: '2025-03-01-preview', deployment: 'mock-echo', maxRetries: 0 });
  const made = await azure.chat.completions.create({ model: 'x', store: true, metadata: { k: 'az' }, messages: [{ role: 'user', content: 'kept' }] });
  const page = await azure.chat.completions.list({ metadata: { k: 'az' } });
  assert.deepEqual(page.data.map((c) => c.id), [made.id]);
  assert.equal(page.data[0].choices[0].message.content, 'kept');
});
