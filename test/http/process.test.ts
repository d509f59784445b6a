/**
 * The real thing: `svc serve` in its own process. A graceful stop drains in-flight work, and usage
 * survives both a restart and a kill -9 in the middle of load: every 200 a client received is counted,
 * and nothing beyond them but requests that were in flight at the kill (a request is counted before its
 * answer is sent, so a kill between the two counts one the client never saw; CI met it once in many runs).
 */
import { mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createKey, startServe, type Served } from '../cli/helpers/cli.ts';

const ask = (s: Served, key: string, body: Record<string, unknown> = {}) =>
  fetch(`${s.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'svc-chat', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 4, ...body }),
  });

async function requestsUsed(s: Served, key: string): Promise<number> {
  const res = await fetch(`${s.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } });
  const body = await res.json();
  const sum = Object.values(body.by_specialist as Record<string, number>).reduce((a, b) => a + b, 0);
  expect(sum).toBe(body.requests_used);
  return body.requests_used;
}

const started: Served[] = [];
afterEach(() => {
  // A failed assertion must not leave a server running.
  for (const s of started.splice(0)) if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill('SIGKILL');
});

async function serve(dir: string, args: string[] = []): Promise<Served> {
  const s = await startServe(dir, args);
  started.push(s);
  return s;
}

describe('svc serve as a process', () => {
  it('drains on SIGTERM, and keeps usage across a restart and a kill -9 under load', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-proc-'));
    const key = await createKey(dir, '--plan', 'scale');
    let s = await serve(dir, ['--drain-seconds', '120']);
    expect(s.logs.find((l) => l.msg === 'listening')!.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    for (let i = 0; i < 3; i++) expect((await ask(s, key)).status).toBe(200);

    // A streamed request is in flight when SIGTERM arrives (its body still arriving, so the drain
    // window does not depend on how long the model talks): it completes, newcomers get 503.
    const body = JSON.stringify({ model: 'svc-chat', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 16, stream: true });
    const inFlight = request(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } });
    const answered = new Promise<{ status: number; text: string }>((resolve, reject) => {
      inFlight.on('response', (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, text }));
      });
      inFlight.on('error', reject);
    });
    inFlight.write(body.slice(0, 10));
    await new Promise((r) => setTimeout(r, 300));
    s.proc.kill('SIGTERM');
    let refused: Response | undefined;
    for (let i = 0; i < 200 && !refused; i++) {
      const r = await fetch(`${s.url}/health`);
      if (r.status === 503) refused = r;
      else await new Promise((res) => setTimeout(res, 20));
    }
    expect(refused, 'a request during the drain').toBeDefined();
    expect(refused!.headers.get('connection')).toBe('close');
    expect((await refused!.json()).error).toMatchObject({ type: 'server_error', code: 'service_unavailable' });
    inFlight.end(body.slice(10));
    const streamed = await answered;
    expect(streamed.status).toBe(200);
    expect(streamed.text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(await s.exited).toEqual({ code: 0, signal: null });

    s = await serve(dir);
    expect(await requestsUsed(s, key)).toBe(4);

    // Load from four clients; kill -9 once some have been answered.
    let ok = 0;
    let asking = 0;
    let stop = false;
    const worker = async () => {
      while (!stop) {
        asking++;
        try {
          const res = await ask(s, key);
          if (res.status === 200) {
            await res.json();
            ok++;
          }
        } catch {
          // The server died under this request: no 200 reached the client.
        } finally {
          asking--;
        }
      }
    };
    const workers = Array.from({ length: 4 }, worker);
    const deadline = Date.now() + 120_000;
    while (ok < 12 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    const pendingAtKill = asking;
    s.proc.kill('SIGKILL');
    const killed = await s.exited;
    stop = true;
    await Promise.all(workers);
    expect(ok, 'answers before the kill').toBeGreaterThanOrEqual(12);
    expect(killed.signal).toBe('SIGKILL');

    s = await serve(dir);
    const used = await requestsUsed(s, key);
    expect(used, 'every answered request counted').toBeGreaterThanOrEqual(4 + ok);
    expect(used, 'nothing counted beyond the answered and those in flight at the kill').toBeLessThanOrEqual(4 + ok + pendingAtKill);
    s.proc.kill('SIGTERM');
    expect((await s.exited).code).toBe(0);
  }, 600_000);
});
