// The mock in Gemini's dialect, through the official `@google/genai`:
// models.generateContent on the Gemini API backend with an API key, each
// answer and fault coming out as the SDK makes it out of the real API.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GoogleGenAI, ApiError, FinishReason } from '@google/genai';
import { startMock } from './mock.mjs';

async function client(args = []) {
  const mock = await startMock(...args);
  // The Gemini API's routes (/v1beta/models/{model}:generateContent) are
  // served at the root (v1beta, as the Go SDK calls); the SDK retries
  // nothing without retryOptions.
  return new GoogleGenAI({ apiKey: 'AIzaMockConformance', httpOptions: { baseUrl: mock.gemini, apiVersion: 'v1beta' } });
}

const ask = (ai, text, config = {}, model = 'mock-echo') =>
  ai.models.generateContent({ model, contents: text, config: { maxOutputTokens: 200, ...config } });

async function rejects(p) {
  try {
    await p;
  } catch (err) {
    return err;
  }
  assert.fail('want an error, the call succeeded');
}

// body is the google.rpc.Status the SDK put into its ApiError's message.
function body(err) {
  assert.ok(err instanceof ApiError, `want an ApiError, got ${err}`);
  return JSON.parse(err.message).error;
}

test('an answer comes back parsed, with its text, finish reason and usage', async () => {
  const ai = await client();
  const out = await ask(ai, 'hello there', { systemInstruction: 'be brief' });
  assert.equal(out.text, 'hello there');
  assert.equal(out.candidates[0].finishReason, FinishReason.STOP);
  assert.equal(out.candidates[0].content.role, 'model');
  const u = out.usageMetadata;
  assert.ok(u.promptTokenCount > 0 && u.candidatesTokenCount > 0);
  assert.equal(u.totalTokenCount, u.promptTokenCount + u.candidatesTokenCount);
  assert.equal(out.modelVersion, 'mock-echo');
});

test('a response schema shapes the answer as JSON', async () => {
  const ai = await client();
  const schema = { type: 'object', properties: { es: { type: 'string' } }, required: ['es'] };
  const out = await ask(ai, 'translate hi', { responseMimeType: 'application/json', responseJsonSchema: schema });
  const got = JSON.parse(out.text);
  assert.equal(typeof got.es, 'string');
});

test('responseMimeType application/json alone answers a JSON object', async () => {
  const ai = await client();
  const out = await ask(ai, 'translate hi', { responseMimeType: 'application/json' }, 'mock-json');
  assert.equal(JSON.parse(out.text).text, 'translate hi');
});

test('an answer cut at maxOutputTokens ends MAX_TOKENS', async () => {
  const ai = await client(['--truncated', '1']);
  const out = await ask(ai, 'tell me a long story about the sea');
  assert.equal(out.candidates[0].finishReason, FinishReason.MAX_TOKENS);
});

test('a blocked answer ends SAFETY with its ratings and no content', async () => {
  const ai = await client(['--content-filter', '1']);
  const out = await ask(ai, 'something dangerous');
  const c = out.candidates[0];
  assert.equal(c.finishReason, FinishReason.SAFETY);
  assert.equal(c.content, undefined);
  assert.ok(c.safetyRatings.some((r) => r.blocked && r.category === 'HARM_CATEGORY_DANGEROUS_CONTENT'));
  assert.equal(out.text, undefined);
});

test('a blocked prompt has promptFeedback.blockReason and no candidate', async () => {
  const ai = await client(['--refusal', '1']);
  const out = await ask(ai, 'something prohibited');
  assert.equal(out.candidates, undefined);
  assert.equal(out.promptFeedback.blockReason, 'PROHIBITED_CONTENT');
});

test('a per-minute 429 is RESOURCE_EXHAUSTED with its QuotaFailure and RetryInfo', async () => {
  const ai = await client(['--rate-limit', '1']);
  const err = await rejects(ask(ai, 'hi'));
  assert.equal(err.status, 429);
  const e = body(err);
  assert.equal(e.code, 429);
  assert.equal(e.status, 'RESOURCE_EXHAUSTED');
  const quota = e.details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.QuotaFailure');
  assert.match(quota.violations[0].quotaId, /PerMinute/);
  const retry = e.details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.RetryInfo');
  assert.match(retry.retryDelay, /^\d+s$/);
});

test('a per-day 429 names a per-day quota', async () => {
  const ai = await client(['--quota', '1']);
  const err = await rejects(ask(ai, 'hi'));
  assert.equal(err.status, 429);
  const quota = body(err).details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.QuotaFailure');
  assert.match(quota.violations[0].quotaId, /PerDay/);
});

test('each fault is the status and google.rpc.Status the SDK sees from Google', async () => {
  for (const [flag, status, code] of [
    ['--server-error', 500, 'INTERNAL'],
    ['--overloaded', 503, 'UNAVAILABLE'],
    ['--model-timeout', 504, 'DEADLINE_EXCEEDED'],
    ['--forbidden', 403, 'PERMISSION_DENIED'],
    ['--payment-required', 400, 'FAILED_PRECONDITION'],
    ['--context-length', 400, 'INVALID_ARGUMENT'],
  ]) {
    const ai = await client([flag, '1']);
    const err = await rejects(ask(ai, 'hi'));
    assert.equal(err.status, status, flag);
    const e = body(err);
    assert.equal(e.code, status, flag);
    assert.equal(e.status, code, flag);
    assert.ok(e.message, `${flag}: no message`);
  }
});

test('a key Google does not know is a 400 with ErrorInfo API_KEY_INVALID', async () => {
  const ai = await client(['--auth', '1']);
  const err = await rejects(ask(ai, 'hi'));
  assert.equal(err.status, 400);
  const e = body(err);
  assert.equal(e.status, 'INVALID_ARGUMENT');
  assert.equal(e.details[0].reason, 'API_KEY_INVALID');
});

test('an unknown model is a 404 NOT_FOUND', async () => {
  const ai = await client();
  const err = await rejects(ask(ai, 'hi', {}, 'gemini-nonexistent'));
  assert.equal(err.status, 404);
  assert.equal(body(err).status, 'NOT_FOUND');
});

test('a temperature over 2 is a 400 INVALID_ARGUMENT', async () => {
  const ai = await client();
  const err = await rejects(ask(ai, 'hi', { temperature: 3 }));
  assert.equal(err.status, 400);
  assert.equal(body(err).status, 'INVALID_ARGUMENT');
});

// Function calling on a Gemini 3 model (the mock's gemini-3-mock-agent):
// the answer's first functionCall part carries a thoughtSignature, the
// round trip that sends that part back unchanged with the function's
// response is answered, and the same request with the signature stripped
// is Gemini 3's 400 INVALID_ARGUMENT "Function call is missing a
// thought_signature in functionCall parts" naming the function and the
// content's position.
test('a Gemini 3 function call round trip sends its thoughtSignature back', async () => {
  const ai = await client();
  const model = 'gemini-3-mock-agent';
  const tools = [{
    functionDeclarations: [{
      name: 'search',
      description: 'finds things',
      parametersJsonSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
    }],
  }];
  const prompt = { role: 'user', parts: [{ text: 'Look up green tea' }] };
  const first = await ai.models.generateContent({ model, contents: [prompt], config: { tools } });
  const content = first.candidates[0].content;
  const part = content.parts.find((p) => p.functionCall);
  assert.ok(part, `want a functionCall part, got ${JSON.stringify(content)}`);
  assert.equal(typeof part.thoughtSignature, 'string');
  assert.ok(part.thoughtSignature.length > 0, 'the functionCall part has an empty thoughtSignature');
  assert.equal(first.functionCalls[0].name, part.functionCall.name);

  const reply = (model_content) => [prompt, model_content, {
    role: 'user',
    parts: [{ functionResponse: { id: part.functionCall.id, name: part.functionCall.name, response: { output: 'found it' } } }],
  }];
  const second = await ai.models.generateContent({ model, contents: reply(content), config: { tools } });
  assert.ok(second.candidates[0].content.parts.length > 0, 'the round trip got no answer');

  const unsigned = { ...content, parts: content.parts.map(({ thoughtSignature, ...rest }) => rest) };
  const err = await rejects(ai.models.generateContent({ model, contents: reply(unsigned), config: { tools } }));
  assert.equal(err.status, 400);
  const e = body(err);
  assert.equal(e.status, 'INVALID_ARGUMENT');
  assert.match(e.message, /^Function call is missing a thought_signature in functionCall parts\./);
  assert.ok(e.message.includes(`function call \`default_api:${part.functionCall.name}\` , position 2.`), e.message);
});
