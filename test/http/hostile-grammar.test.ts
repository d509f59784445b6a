/**
 * Grammar attacks through the API: a schema that is cheap to send but slow or memory-hungry to compile
 * gets a 400 naming it while the server keeps answering everyone else, and after a burst of requests
 * that make the grammar library fail, every specialist still answers for a key of every plan.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/engine.ts';
import { bearer, postJson, startServer, type Harness } from './helpers/harness.ts';
import { loadPlans } from '../../adapters/config-node.ts';

const engine = () => testEngine('stories260K.gguf', { grammars: { compileTimeoutMs: 1500, memoryMiB: 40 } });

/** Nested bounded repetitions: far more than 1.5 s to compile. */
const slowSchema = (tag: string) => ({ type: 'object', title: tag, properties: { x: { type: 'string', pattern: '^((a|b){1,200}c){1,200}$' } } });
/** More than 40 MiB of grammar memory to compile. */
const hungrySchema = (tag: string) => ({ type: 'string', title: tag, pattern: '^([a-z]{1,250}[0-9]{1,250}){1,250}$' });

function schemaRequest(schema: object, maxTokens = 16) {
  return { model: 'svc-extract', messages: [{ role: 'user', content: 'Order 7 to Porto.' }], max_tokens: maxTokens, response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } };
}

/** One small valid request per specialist. */
const REQUESTS: Record<string, Record<string, unknown>> = {
  classify: { specialist: 'classify', prompt: 'The box arrived crushed.', labels: ['praise', 'complaint'] },
  summarise: { specialist: 'summarise', prompt: 'Tom had a red ball. It rolled into the pond. Amy got it out.', max_bullets: 2, max_words: 20, max_tokens: 24 },
  extract: { specialist: 'extract', prompt: 'Order 1182 for Ana.', schema: { type: 'object', properties: { order: { type: 'integer' } }, required: ['order'] }, max_tokens: 16 },
  qa: { specialist: 'qa', prompt: 'Where did it go?', context: 'The ball rolled into the pond. Amy got it out.', max_tokens: 24 },
  chat: { specialist: 'chat', prompt: 'Hello.', max_tokens: 8 },
  code: { specialist: 'code', prompt: 'Add two numbers.', max_tokens: 24 },
};

describe('hostile grammars over HTTP', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startServer({ engine });
    await (await engine()).grammars!.warm!();
  });
  afterAll(() => h.close());

  it('a schema too slow to compile is a 400 naming it, while /health and another request answer quickly', async () => {
    const pro = h.key('professional', { paid: true });
    const other = h.key('starter', { paid: true });
    // A normal request first, so the engine is loaded and warm.
    expect((await postJson(`${h.baseURL}/infer`, REQUESTS.classify, bearer(other))).status).toBe(200);

    const latencies: number[] = [];
    let polling = true;
    const poll = (async () => {
      while (polling) {
        const t0 = performance.now();
        const r = await fetch(`${h.url}/health`);
        expect(r.status).toBe(200);
        await r.arrayBuffer();
        latencies.push(performance.now() - t0);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const t0 = performance.now();
    const [slow, normal] = await Promise.all([
      postJson(`${h.baseURL}/chat/completions`, schemaRequest(slowSchema('slow-1')), bearer(pro)),
      (async () => {
        await new Promise((r) => setTimeout(r, 300)); // while the compile runs
        return postJson(`${h.baseURL}/infer`, REQUESTS.classify, bearer(other));
      })(),
    ]);
    const slowMs = performance.now() - t0;
    polling = false;
    await poll;

    const body = (await slow.json()) as { error: { type: string; param: string; message: string } };
    expect(slow.status).toBe(400);
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.param).toBe('response_format.json_schema.schema');
    expect(body.error.message).toMatch(/^response_format\.json_schema\.schema: compiling it took longer than the 1500 ms budget/);
    expect(normal.status).toBe(200);
    latencies.sort((a, b) => a - b);
    const median = latencies[Math.floor(latencies.length / 2)];
    const max = latencies[latencies.length - 1];
    console.info(`slow schema refused in ${slowMs.toFixed(0)} ms; /health ×${latencies.length}: median ${median.toFixed(1)} ms, max ${max.toFixed(1)} ms`);
    expect(latencies.length).toBeGreaterThan(10);
    expect(median).toBeLessThan(100);
    // A loaded test machine can delay any one answer; the fuzz run (npm run fuzz) holds the 250 ms line.
    expect(max).toBeLessThan(750);
  });

  it('after a burst of requests that make the grammar library fail, every specialist answers 200 for a key of every plan', async () => {
    const attacker = h.key('scale', { paid: true });
    const burst = [
      ...[1, 2, 3].map((i) => schemaRequest(slowSchema(`burst-slow-${i}`))),
      ...[1, 2].map((i) => schemaRequest(hungrySchema(`burst-hungry-${i}`))),
      { ...schemaRequest({}), response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { $ref: '#/$defs/nothing' } } } },
    ];
    const answers = await Promise.all(burst.map((b) => postJson(`${h.baseURL}/chat/completions`, b, bearer(attacker))));
    for (const a of answers) {
      const body = (await a.json()) as { error?: { param: string } };
      expect(a.status, JSON.stringify(body)).toBe(400);
      expect(body.error?.param).toBe('response_format.json_schema.schema');
    }

    for (const plan of loadPlans().file.plans) {
      const key = h.key(plan.id, { paid: true, ...(plan.id === 'enterprise' ? { rpm: 1000, monthly: 100_000 } : {}) });
      for (const specialist of plan.specialists) {
        const r = await postJson(`${h.baseURL}/infer`, REQUESTS[specialist], bearer(key));
        expect(r.status, `${plan.id}/${specialist}: ${await r.clone().text()}`).toBe(200);
        await r.arrayBuffer();
      }
      if (plan.features.jsonSchema) {
        const r = await postJson(`${h.baseURL}/chat/completions`, { model: 'svc-chat', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 24, response_format: { type: 'json_object' } }, bearer(key));
        const body = (await r.json()) as { choices: Array<{ message: { content: string } }> };
        expect(r.status, `${plan.id}/json_object`).toBe(200);
        expect(typeof JSON.parse(body.choices[0].message.content)).toBe('object');
      }
    }
  }, 400_000);
});
