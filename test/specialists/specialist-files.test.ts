/**
 * The specialist file format as a user meets it: copy a shipped file, change it, list the new name in a
 * plan, and the service offers it with its own guardrail. And what counts as a plan feature: a caller's
 * JSON schema does, a specialist's own grammar does not.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/engine.ts';
import { bearer, postJson, startServer, type Harness } from '../http/helpers/harness.ts';
import { infer } from './helpers.ts';
import { DEFAULT_PLANS_PATH, DEFAULT_SPECIALISTS_DIR } from '../../adapters/config-node.ts';

let h: Harness;
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-specialists-'));
  const specialists = join(dir, 'specialists');
  // The shipped six, plus one of the user's own: classify copied, renamed, with its own labels and prompt.
  mkdirSync(specialists);
  for (const f of readdirSync(DEFAULT_SPECIALISTS_DIR)) copyFileSync(join(DEFAULT_SPECIALISTS_DIR, f), join(specialists, f));
  const mine = JSON.parse(readFileSync(join(DEFAULT_SPECIALISTS_DIR, 'classify.json'), 'utf8'));
  Object.assign(mine, {
    name: 'triage',
    description: 'Route tickets to a team.',
    systemPrompt: 'You route support tickets. Answer with the team only.',
    guardrail: { kind: 'labels', labels: ['billing', 'bugs', 'sales'] },
    maxTokensLimit: 32,
  });
  writeFileSync(join(specialists, 'triage.json'), JSON.stringify(mine, null, 2));
  const brief = { name: 'brief', description: 'Very short answers.', systemPrompt: 'Answer in a few words.', maxTokensLimit: 3 };
  writeFileSync(join(specialists, 'brief.json'), JSON.stringify(brief));
  // A plan with the new specialist and extract, but without the jsonSchema feature.
  const plans = JSON.parse(readFileSync(DEFAULT_PLANS_PATH, 'utf8'));
  plans.plans.push({ id: 'team', name: 'Team', requestsPerMinute: 100, requestsPerMonth: 1000, specialists: ['triage', 'extract', 'chat', 'brief'], features: { functionCalling: false, jsonSchema: false, fineTunedAdapters: false } });
  const plansPath = join(dir, 'plans.json');
  writeFileSync(plansPath, JSON.stringify(plans));
  h = await startServer({ engine: () => testEngine(), plansPath, specialistsDir: specialists });
});
afterAll(() => h.close());

describe('a specialist of the user’s own', () => {
  it('is listed, and answers with its own labels', async () => {
    const key = h.key('team', { paid: true });
    const models = await (await fetch(`${h.baseURL}/models`, { headers: bearer(key) })).json();
    expect(models.data.map((m: { id: string }) => m.id)).toEqual(['svc-extract', 'svc-chat', 'svc-brief', 'svc-triage']);
    for (const [i, prompt] of ['I was charged twice.', 'The app crashes on start.', 'Do you have a discount?'].entries()) {
      const r = await infer(h, key, { specialist: 'triage', prompt, temperature: i % 2, seed: i });
      expect(['billing', 'bugs', 'sales']).toContain(r.result);
      expect(r.confidence).toBeGreaterThan(0);
    }
  });

  it('keeps a request within the file’s maxTokensLimit', async () => {
    const r = await infer(h, h.key('team', { paid: true }), { specialist: 'brief', prompt: 'Tell me a long story.', max_tokens: 50, temperature: 0 });
    expect(r.finish_reason).toBe('length');
    const res = await postJson(`${h.baseURL}/chat/completions`, { model: 'svc-brief', messages: [{ role: 'user', content: 'Tell me a long story.' }], max_tokens: 50 }, bearer(h.key('team', { paid: true })));
    expect((await res.json()).usage.completion_tokens).toBe(3);
  });
});

describe('plan features', () => {
  it('extract’s own JSON needs no feature; a caller’s schema is the jsonSchema feature', async () => {
    const key = h.key('team', { paid: true });
    const plain = await infer(h, key, { specialist: 'extract', prompt: 'Tom is 7.', max_tokens: 40 });
    expect(JSON.parse(plain.result)).toBeTypeOf('object');
    for (const [url, body] of [
      [`${h.baseURL}/infer`, { specialist: 'extract', prompt: 'Tom is 7.', schema: { type: 'object' } }],
      [`${h.baseURL}/chat/completions`, { model: 'svc-extract', messages: [{ role: 'user', content: 'Tom is 7.' }], schema: { type: 'object' } }],
    ] as const) {
      const res = await postJson(url, body, bearer(key));
      expect(res.status).toBe(403);
      expect((await res.json()).error).toMatchObject({ type: 'permission_error', code: 'feature_not_in_plan', param: 'schema' });
    }
  });
});
