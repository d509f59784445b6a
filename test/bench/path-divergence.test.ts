/**
 * The oracle's measures of how far our next-token distributions are from llama.cpp's
 * (bench/llama-oracle.ts: the largest probability difference, and the largest KL divergence, which the
 * GPU check reports for random-weight models whose probabilities are all small), on the engine's own
 * logits so the expected values are exact.
 */
import { describe, expect, it } from 'vitest';
import { divergenceOf, pathDivergence, softmax, type LlamaCppReference } from '../../bench/llama-oracle.ts';
import { testEngine } from '../helpers/engine.ts';

describe('pathDivergence', () => {
  it('is zero against our own distributions, and sees logits moved where every probability is small', async () => {
    const engine = await testEngine();
    const prompt = engine.tokenizer.encode('Once upon a time');
    const greedy = [300, 301, 302];
    const logits = await engine.logits([...prompt, ...greedy.slice(0, -1)]);
    const refOf = (rows: Float32Array[]): LlamaCppReference => ({ prompt, greedy, probs: greedy.map((_, i) => softmax(rows[prompt.length - 1 + i])) });
    const same = await pathDivergence(engine, refOf(logits));
    expect(same.prob).toBeLessThan(1e-6);
    expect(same.kl).toBeLessThan(1e-6);
    // Flattened to near-uniform (logits / 50), then half the logits moved by 1: every probability stays
    // small, so the largest difference of one is small, while KL is not.
    const flat = logits.map((r) => r.map((v) => v / 50));
    const moved = flat.map((r) => r.map((v, t) => (t % 2 ? v + 1 : v)));
    const d = divergenceOf(moved, refOf(flat));
    expect(d.prob).toBeLessThan(5e-3);
    expect(d.kl).toBeGreaterThan(0.05);
    expect(divergenceOf(flat, refOf(flat))).toEqual({ prob: 0, kl: 0 });
  });
});
