// The mock as Vertex AI, through the official `@google/genai` on its Vertex
// backend (`vertexai: true`, a project and a location), with offline
// credentials: an OAuth2Client from google-auth-library holding a fixed
// access token that has not expired, so the SDK asks no token endpoint and
// no metadata server. Every request the SDK sends is recorded (a wrapper
// around the global fetch the SDK uses) to check its path and headers are
// Vertex AI's.
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { GoogleGenAI, ApiError, FinishReason } from '@google/genai';
import { OAuth2Client } from 'google-auth-library';
import { startMock } from './mock.mjs';

const token = 'ya29.mock-conformance';
const project = 'mock-project';

// sent records the URL and headers of each request the SDK makes.
let sent = [];
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init = {}) => {
  const url = typeof input === 'string' || input instanceof URL ? String(input) : input.url;
  sent.push({ url: new URL(url), headers: new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined)) });
  return realFetch(input, init);
};
beforeEach(() => { sent = []; });

function credentials() {
  const auth = new OAuth2Client();
  auth.setCredentials({ access_token: token, token_type: 'Bearer', expiry_date: Date.now() + 3600_000 });
  return auth;
}

async function client(args = [], location = 'europe-west4') {
  const mock = await startMock(...args);
  // baseUrl replaces https://{location}-aiplatform.googleapis.com/; the
  // path keeps the project and location. The SDK retries nothing without
  // retryOptions.
  return new GoogleGenAI({
    vertexai: true, project, location,
    googleAuthOptions: { authClient: credentials() },
    httpOptions: { baseUrl: mock.gemini },
  });
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

function body(err) {
  assert.ok(err instanceof ApiError, `want an ApiError, got ${err}`);
  return JSON.parse(err.message).error;
}

test('a Vertex call goes to its project and location with the bearer token, and is answered', async () => {
  const ai = await client();
  const out = await ask(ai, 'hello there', { systemInstruction: 'be brief' });
  assert.equal(out.text, 'hello there');
  assert.equal(out.candidates[0].finishReason, FinishReason.STOP);
  const u = out.usageMetadata;
  assert.ok(u.promptTokenCount > 0 && u.candidatesTokenCount > 0);
  assert.equal(sent.length, 1);
  assert.match(sent[0].url.pathname,
    new RegExp(`^/v1(beta1)?/projects/${project}/locations/europe-west4/publishers/google/models/mock-echo:generateContent$`));
  assert.equal(sent[0].headers.get('authorization'), `Bearer ${token}`);
  assert.equal(sent[0].headers.get('x-goog-api-key'), null);
});

test('each location is its own path', async () => {
  const ai = await client([], 'us-central1');
  await ask(ai, 'hi');
  assert.match(sent[0].url.pathname, /\/locations\/us-central1\/publishers\/google\/models\/mock-echo:generateContent$/);
});

test('a response schema shapes the answer as JSON on Vertex', async () => {
  const ai = await client();
  const schema = { type: 'object', properties: { es: { type: 'string' } }, required: ['es'] };
  const out = await ask(ai, 'translate hi', { responseMimeType: 'application/json', responseJsonSchema: schema });
  assert.equal(typeof JSON.parse(out.text).es, 'string');
});

test('a blocked answer ends SAFETY on Vertex', async () => {
  const ai = await client(['--content-filter', '1']);
  const out = await ask(ai, 'something dangerous');
  assert.equal(out.candidates[0].finishReason, FinishReason.SAFETY);
  assert.equal(out.text, undefined);
});

test('Vertex faults are the status and google.rpc.Status the SDK sees from Google', async () => {
  for (const [flag, status, code] of [
    ['--rate-limit', 429, 'RESOURCE_EXHAUSTED'],
    ['--server-error', 500, 'INTERNAL'],
    ['--overloaded', 503, 'UNAVAILABLE'],
    ['--forbidden', 403, 'PERMISSION_DENIED'],
  ]) {
    const ai = await client([flag, '1']);
    const err = await rejects(ask(ai, 'hi'));
    assert.equal(err.status, status, flag);
    const e = body(err);
    assert.equal(e.code, status, flag);
    assert.equal(e.status, code, flag);
  }
});

test('a Vertex call without a token is refused as Google refuses an unauthenticated caller', async () => {
  const mock = await startMock();
  // No credentials at all: what the mock answers to a request with no
  // Authorization header, sent straight to the Vertex path.
  const res = await realFetch(`${mock.gemini}/v1/projects/${project}/locations/europe-west4/publishers/google/models/mock-echo:generateContent`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
  });
  assert.equal(res.status, 401);
  assert.equal((await res.json()).error.status, 'UNAUTHENTICATED');
});
