/**
 * LoRA parity with llama.cpp: the seeded random adapters of scripts/fixtures/random-lora.ts, applied by
 * our engine, give llama.cpp's log-probabilities and greedy tokens (fixtures recorded by
 * scripts/fixtures/lora-parity.ts through node-llama-cpp's LoRA option), and they move the output far
 * more than the tolerance, so the comparison says something about the adapter.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FileSource } from '../../engine/loader/file-source.ts';
import { fixtureLora } from '../../scripts/fixtures/random-lora.ts';
import type { LoraParityFixture } from '../../scripts/fixtures/lora-parity.ts';
import { testEngine } from '../helpers/engine.ts';

const fixture = JSON.parse(readFileSync(new URL('../fixtures/lora-parity.json', import.meta.url), 'utf8')) as LoraParityFixture;
const dir = mkdtempSync(join(tmpdir(), 'lora-parity-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Log-softmax in f64. */
function logSoftmax(logits: Float32Array): Float64Array {
  let max = -Infinity;
  for (const v of logits) max = Math.max(max, v);
  let sum = 0;
  for (const v of logits) sum += Math.exp(v - max);
  const lse = max + Math.log(sum);
  return Float64Array.from(logits, (v) => v - lse);
}

function argmax(v: ArrayLike<number>): number {
  let b = 0;
  for (let i = 1; i < v.length; i++) if (v[i] > v[b]) b = i;
  return b;
}

/**
 * F32 weights: llama.cpp's log-probabilities of every token it gives at least 1e-4 agree within this
 * (the base model alone differs from llama.cpp by up to ~5e-3 here: summation order).
 */
const F32_LOGPROB_TOL = 0.02;
/** Q8_0: llama.cpp quantizes activations to 8 bits, so as in parity.test.ts only within a few percent of the range. */
const Q8_RELATIVE_TOL = 0.05;

describe('LoRA adapters give llama.cpp’s output', () => {
  for (const c of fixture.cases) {
    it(`${c.adapter} (scale ${c.scale}) on ${c.model}`, async () => {
      const engine = await testEngine(c.model);
      // Through a file, as a service loads them (the bytes are written by the seeded generator here).
      const path = join(dir, `${c.adapter}.gguf`);
      writeFileSync(path, await fixtureLora(c.adapter));
      const handle = await engine.loadAdapter(new FileSource(path), { scale: c.scale });
      try {
        const adapted = (await engine.logits(c.tokens, { adapter: handle.id })).map(logSoftmax);
        const base = (await engine.logits(c.tokens)).map(logSoftmax);
        let worst = 0;
        let effect = 0;
        for (const p of c.positions) {
          const ours = adapted[p.index];
          for (let i = 0; i < ours.length; i++) effect = Math.max(effect, Math.abs(ours[i] - base[p.index][i]));
          if (p.logprobs) {
            for (let i = 0; i < p.logprobs.length; i++) if (p.logprobs[i] > Math.log(1e-4)) worst = Math.max(worst, Math.abs(ours[i] - p.logprobs[i]));
            expect(argmax(ours)).toBe(argmax(p.logprobs));
          } else {
            const top = p.top!;
            const range = top[0][1] - top[top.length - 1][1];
            for (const [tok, lp] of top) worst = Math.max(worst, Math.abs(ours[tok] - lp) / range);
            expect(argmax(ours)).toBe(top[0][0]);
          }
        }
        const tol = c.positions[0].logprobs ? F32_LOGPROB_TOL : Q8_RELATIVE_TOL;
        expect(worst).toBeLessThan(tol);
        // The adapter moves some log-probability by far more than the tolerance (so parity is not just the base model's).
        expect(effect).toBeGreaterThan(c.positions[0].logprobs ? 20 * tol : 1);

        if (c.greedy) {
          const gen = engine.generate({ tokens: c.greedy.promptTokens, maxTokens: c.greedy.tokens.length, temperature: 0, stopAtEndOfGeneration: false, adapter: handle.id });
          expect((await gen.result).tokens).toEqual(c.greedy.tokens);
          const plain = await engine.generate({ tokens: c.greedy.promptTokens, maxTokens: c.greedy.tokens.length, temperature: 0, stopAtEndOfGeneration: false }).result;
          expect(plain.tokens).not.toEqual(c.greedy.tokens);
        }
      } finally {
        await engine.unloadAdapter(handle.id);
      }
    });
  }
});
