/**
 * Parity with llama.cpp, the reference implementation of GGUF: greedy token ids on the F32 model equal
 * llama.cpp's (fixtures recorded by scripts/fixtures/greedy.ts), and on the Q8_0 model the logits agree
 * with an independent float reference computed from the Hugging Face F32 weights.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { testEngine } from '../helpers/engine.ts';
import { sharedModel } from '../helpers/models.ts';
import { referenceLogits, type HfLlamaConfig } from '../helpers/reference-llama.ts';

const fixtures = JSON.parse(readFileSync(new URL('../fixtures/llama-greedy.json', import.meta.url), 'utf8')) as Record<string, { prompt: string; promptTokens: number[]; greedy: number[]; text: string; fullText: string }[]>;

function argmax(v: Float32Array): number {
  let b = 0;
  for (let i = 1; i < v.length; i++) if (v[i] > v[b]) b = i;
  return b;
}

describe('greedy generation equals llama.cpp (stories260K, F32)', () => {
  for (const f of fixtures['stories260K.gguf']) {
    it(`"${f.prompt}"`, async () => {
      const engine = await testEngine();
      const gen = engine.generate({ tokens: f.promptTokens, maxTokens: f.greedy.length, temperature: 0, stopAtEndOfGeneration: false });
      const r = await gen.result;
      // The issue asks for at least 32; all recorded tokens are compared.
      expect(r.tokens.slice(0, 32)).toEqual(f.greedy.slice(0, 32));
      expect(r.tokens).toEqual(f.greedy);
    });
  }

  it('the prompt text encodes to llama.cpp token ids and decodes to its text', async () => {
    const engine = await testEngine();
    for (const f of fixtures['stories260K.gguf']) {
      expect(engine.tokenizer.encode(f.prompt)).toEqual(f.promptTokens);
      const gen = engine.generate({ prompt: f.prompt, maxTokens: f.greedy.length, temperature: 0, stopAtEndOfGeneration: false });
      let streamed = '';
      for await (const c of gen) streamed += c.text;
      // llama.cpp keeps the space-prefix of the first word after BOS (" Once upon..."); the user's prompt has none.
      expect(f.prompt + streamed).toBe(f.fullText.replace(/^ /, ''));
    }
  });
});

describe('Q8_0 logits agree with a float reference (TinyStories-656K)', () => {
  it('top-1 equal on at least 95% of positions, logits close', async () => {
    const engine = await testEngine('TinyStories-656K-Q8_0.gguf');
    const text = 'Once upon a time, there was a little girl named Lily. She loved to play outside with her friends. One day, she saw a big red ball in the park. She ran to get it, but a dog took it first. Lily was sad, but her mom gave her a hug.';
    const tokens = engine.tokenizer.encode(text);
    expect(tokens.length).toBeGreaterThan(30);
    const ours = await engine.logits(tokens);
    const dir = sharedModel('TinyStories-656K-hf');
    const cfg = JSON.parse(readFileSync(`${dir}/config.json`, 'utf8')) as HfLlamaConfig;
    const ref = referenceLogits(`${dir}/model.safetensors`, cfg, tokens);
    let same = 0;
    let worst = 0;
    for (let p = 0; p < tokens.length; p++) {
      if (argmax(ours[p]) === argmax(ref[p])) same++;
      let scale = 0;
      for (const v of ref[p]) scale = Math.max(scale, Math.abs(v));
      for (let i = 0; i < ref[p].length; i++) worst = Math.max(worst, Math.abs(ours[p][i] - ref[p][i]) / scale);
    }
    expect(same / tokens.length).toBeGreaterThanOrEqual(0.95);
    // Q8_0 weight error, not a wrong computation: differences stay a few percent of the logit range.
    expect(worst).toBeLessThan(0.05);
  });

  it('the same logits in steps of any size up to the rows a step samples, and a clear error past them', async () => {
    const engine = await testEngine('TinyStories-656K-Q8_0.gguf');
    const tokens = engine.tokenizer.encode('Once upon a time, there was a little girl named Lily.');
    const whole = await engine.logits(tokens);
    const pairs = await engine.logits(tokens, { stepTokens: 2 });
    expect(pairs).toHaveLength(tokens.length);
    let worst = 0;
    pairs.forEach((row, p) => row.forEach((v, i) => (worst = Math.max(worst, Math.abs(v - whole[p][i])))));
    expect(worst).toBeLessThan(1e-3);
    for (const stepTokens of [0, 1.5, 1e6]) await expect(engine.logits(tokens, { stepTokens })).rejects.toThrow(/stepTokens must be a whole number in 1\.\.\d+/);
  });
});
