/**
 * warmUp() (run by `svc serve` and the in-browser service before they take requests) builds the pipelines
 * with short generations (prompts long enough for the tiled products in their two widths, and one as
 * long as a step takes) and leaves nothing behind: no sequence, every KV page free, and the next
 * greedy generation exactly as llama.cpp's.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/engine.ts';

const fixtures = JSON.parse(readFileSync(new URL('../fixtures/llama-greedy.json', import.meta.url), 'utf8')) as Record<string, { promptTokens: number[]; greedy: number[] }[]>;

describe('engine warm-up', () => {
  it('runs a prefill and a decode step at each of three prompt lengths, then leaves the engine as it found it', async () => {
    const engine = await testEngine('stories260K.gguf', { prefixCache: true });
    const before = engine.stats();
    await engine.warmUp();
    const after = engine.stats();
    expect(after.steps.count - before.steps.count).toBe(6);
    expect(after.activeSequences).toBe(0);
    expect(after.kvPages.free).toBe(after.kvPages.total);
    // Outside the prefix cache: no lookup counted, no page of warm-up tokens listed.
    expect(after.prefixCache).toEqual(before.prefixCache);
    const f = fixtures['stories260K.gguf'][0];
    const r = await engine.generate({ tokens: f.promptTokens, maxTokens: 16, temperature: 0, stopAtEndOfGeneration: false }).result;
    expect(r.tokens).toEqual(f.greedy.slice(0, 16));
  });
});
