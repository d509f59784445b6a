import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { effectiveLimits, parsePlans } from '../../protocol/plans.ts';
import { SPECIALIST_NAMES } from '../../protocol/specialists/schema.ts';
import { loadPlans, loadSpecialists } from '../../adapters/config-node.ts';

describe('config/plans.json', () => {
  const plans = loadPlans();

  it('has the spec limits per plan and a 7-day trial', () => {
    expect(plans.trialDays).toBe(7);
    const limits = Object.fromEntries(plans.ids().map((id) => [id, [plans.get(id)!.requestsPerMinute, plans.get(id)!.requestsPerMonth]]));
    expect(limits).toEqual({ solo: [20, 10_000], starter: [100, 100_000], professional: [500, 500_000], scale: [2000, 2_000_000], enterprise: [null, null] });
  });

  it('only names known specialists, and fine-tuned adapters only on Scale and Enterprise', () => {
    const specialists = loadSpecialists();
    expect(() => plans.checkSpecialists((n) => specialists.has(n))).not.toThrow();
    expect(plans.ids().filter((id) => plans.get(id)!.features.fineTunedAdapters)).toEqual(['scale', 'enterprise']);
  });

  it('takes per-account limits for Enterprise only when both are set', () => {
    const ent = plans.get('enterprise')!;
    expect(effectiveLimits(ent, { rpmLimit: 5, monthlyLimit: 50 })).toEqual({ perMinute: 5, perMonth: 50 });
    expect(effectiveLimits(ent, { rpmLimit: 5, monthlyLimit: null })).toBeNull();
    expect(effectiveLimits(plans.get('solo')!, { rpmLimit: 5, monthlyLimit: 50 })).toEqual({ perMinute: 20, perMonth: 10_000 });
  });

  it.each([
    [{ trialDays: 7, plans: [] }, 'plans'],
    [{ trialDays: 0, plans: [plan()] }, 'trialDays'],
    [{ trialDays: 7, plans: [plan(), plan()] }, 'appears twice'],
    [{ trialDays: 7, plans: [plan({ requestsPerMinute: null })] }, 'both numbers or both null'],
    [{ trialDays: 7, plans: [plan({ features: { functionCalling: true } })] }, 'jsonSchema'],
    [{ trialDays: 7, plans: [plan({ limit: 3 })] }, 'limit'],
  ])('rejects a bad plans file (%j) with a message naming %s', (raw, needle) => {
    expect(() => parsePlans(raw, 'plans.json')).toThrow(needle);
  });
});

describe('specialists/*.json', () => {
  it('loads all six with a system prompt, the spec max_tokens default and their guardrails', () => {
    const reg = loadSpecialists();
    expect(reg.names()).toEqual([...SPECIALIST_NAMES]);
    for (const n of SPECIALIST_NAMES) {
      const s = reg.get(n)!;
      expect(s.systemPrompt.length).toBeGreaterThan(0);
      expect(s.sampling).toMatchObject({ topP: 1, maxTokens: 512 });
    }
    // chat keeps the spec's temperature; the specialists whose answer has one right form sample low.
    expect(reg.get('chat')!.sampling.temperature).toBe(0.7);
    expect(reg.get('code')!.sampling.temperature).toBeLessThanOrEqual(0.3);
    expect(Object.fromEntries(SPECIALIST_NAMES.map((n) => [n, reg.get(n)!.guardrail.kind]))).toEqual({
      classify: 'labels',
      summarise: 'summary',
      extract: 'json',
      qa: 'grounded',
      chat: 'none',
      code: 'fenced-code',
    });
    expect(SPECIALIST_NAMES.filter((n) => reg.get(n)!.memory)).toEqual(['chat']);
  });

  it('refuses a folder missing a specialist, a misnamed file or an unknown field', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-spec-'));
    const write = (file: string, body: object) => writeFileSync(join(dir, file), JSON.stringify(body));
    for (const n of SPECIALIST_NAMES.slice(1)) write(`${n}.json`, { name: n, description: 'd', systemPrompt: '' });
    expect(() => loadSpecialists(dir)).toThrow('specialists missing: classify');
    write('classify.json', { name: 'clasify', description: 'd', systemPrompt: '' });
    expect(() => loadSpecialists(dir)).toThrow('does not match the file name');
    write('classify.json', { name: 'classify', description: 'd', systemPrompt: '', guardrail: true });
    expect(() => loadSpecialists(dir)).toThrow('guardrail');
    write('classify.json', { name: 'classify', description: 'd', systemPrompt: '', sampling: { temperature: 3 } });
    expect(() => loadSpecialists(dir)).toThrow('temperature');
    write('classify.json', { name: 'classify', description: 'd', systemPrompt: '', guardrail: { kind: 'labels', labels: ['only'] } });
    expect(() => loadSpecialists(dir)).toThrow('labels');
    write('classify.json', { name: 'classify', description: 'd', systemPrompt: '', guardrail: { kind: 'json', schema: { type: 'object', properties: { a: { type: 'string', uniqueItems: true } } } } });
    expect(() => loadSpecialists(dir)).toThrow('guardrail.schema at /properties/a/uniqueItems');
    write('classify.json', { name: 'classify', description: 'd', systemPrompt: '' });
    const bare = loadSpecialists(dir).get('classify')!;
    expect(bare.sampling).toEqual({ temperature: 0.7, topP: 1, maxTokens: 512 });
    expect(bare.guardrail).toEqual({ kind: 'none' });
    expect(bare.memory).toBe(false);
  });
});

function plan(over: Record<string, unknown> = {}) {
  return {
    id: 'p',
    name: 'P',
    requestsPerMinute: 1,
    requestsPerMonth: 2,
    specialists: ['chat'],
    features: { functionCalling: false, jsonSchema: false, fineTunedAdapters: false },
    ...over,
  };
}
