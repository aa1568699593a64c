// Starts `tenax mock` for the conformance tests. The binary is $TENAX_BIN
// (the Go test that runs this suite sets it); without it, the suite builds
// one from the repository with `go build`.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { after } from 'node:test';

let bin = process.env.TENAX_BIN;

function tenaxBin() {
  if (!bin) {
    const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
    bin = join(mkdtempSync(join(tmpdir(), 'tenax-sdk-')), 'tenax');
    execFileSync('go', ['build', '-o', bin, './cmd/tenax'], { cwd: repo, stdio: 'inherit' });
  }
  return bin;
}

const running = new Set();
after(async () => {
  await Promise.all([...running].map((m) => m.stop()));
});

// startMock runs `tenax mock ARGS` on a free port and resolves to its base
// URLs once it listens: { openai: 'http://127.0.0.1:N/v1', anthropic: 'http://127.0.0.1:N', bedrock: 'http://127.0.0.1:N', gemini: 'http://127.0.0.1:N', stop() }.
export async function startMock(...args) {
  const child = spawn(tenaxBin(), ['mock', '--addr', '127.0.0.1:0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  const lines = createInterface({ input: child.stdout });
  const line = await new Promise((resolve, reject) => {
    lines.once('line', resolve);
    exited.then((code) => reject(new Error(`tenax mock ${args.join(' ')} exited ${code}: ${stderr}`)));
  });
  const m = line.match(/OpenAI base URL (\S+), Anthropic base URL (\S+)/);
  if (!m) throw new Error(`unexpected listening line: ${line}`);
  const mock = {
    openai: m[1],
    anthropic: m[2],
    // Bedrock's runtime routes (/model/{id}/converse) are served at the root.
    bedrock: m[2],
    // So are Gemini's (/v1beta/models/{model}:generateContent) and
    // Vertex AI's (/v1/projects/…).
    gemini: m[2],
    async stop() {
      if (!running.delete(mock)) return;
      child.kill('SIGINT');
      const code = await exited;
      if (code !== 0) throw new Error(`tenax mock exited ${code} after SIGINT: ${stderr}`);
    },
  };
  running.add(mock);
  return mock;
}
