/**
 * Serving LoRA adapters: sequences with different adapters and none share steps and each gets what it
 * would alone; a step without adapter rows runs exactly the base dispatches; unloading waits for its
 * users and refuses new ones; the prefix cache never hands pages computed under one adapter (or none)
 * to a sequence running under another.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { encodeLoraAdapter } from '../../engine/lora/adapter-file.ts';
import { EngineInputError, type GenerateOptions } from '../../engine/types.ts';
import { randomLoraSpec } from '../../scripts/fixtures/random-lora.ts';
import { testEngine } from '../helpers/engine.ts';

const engine = () => testEngine('stories260K.gguf', { grammars: 'in-process', contextLength: 256, maxSequences: 4 });

async function loadTwo() {
  const e = await engine();
  const x = await e.loadAdapter(encodeLoraAdapter(randomLoraSpec(e.config, { rank: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 11, bScale: 0.1 })), { name: 'x' });
  // Another rank, some targets, some layers: its rows and X's rows differ in every dimension the kernels index.
  const y = await e.loadAdapter(encodeLoraAdapter(randomLoraSpec(e.config, { rank: 8, alpha: 16, targets: ['v', 'o', 'down'], seed: 12, bScale: 0.1, layers: [1, 3] })), { name: 'y', scale: 2 });
  return { e, x, y };
}

const greedy = (prompt: string, adapter?: string): GenerateOptions => ({ prompt, maxTokens: 24, temperature: 0, stopAtEndOfGeneration: false, adapter });

describe('LoRA serving', () => {
  afterEach(async () => {
    const e = await engine();
    for (const a of e.adapters()) await e.unloadAdapter(a.id);
  });

  it('loads adapters with their handles, lists and counts them', async () => {
    const { e, x, y } = await loadTwo();
    expect(x).toEqual({ id: x.id, name: 'x', rank: 4, alpha: 8, scale: 1, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], layers: 5, bytes: 5 * 4 * 4 * (64 + 64 + 64 + 32 + 64 + 32 + 64 + 64 + 64 + 172 + 64 + 172 + 172 + 64) });
    expect(y).toMatchObject({ name: 'y', rank: 8, alpha: 16, scale: 2, targets: ['v', 'o', 'down'], layers: 2 });
    expect(x.id).toMatch(/^lora-\d+$/);
    expect(e.adapters().map((a) => a.id)).toEqual([x.id, y.id]);
    expect(e.stats().adapters).toBe(2);
    await e.unloadAdapter(x.id);
    await e.unloadAdapter(y.id);
    expect(e.stats().adapters).toBe(0);
  });

  it('sequences with adapter X, adapter Y and none in the same steps each equal their run alone', async () => {
    const { e, x, y } = await loadTwo();
    const prompts = ['Once upon a time', 'The little dog', 'Lily and Tom went to the park.'];
    const runs = [
      [prompts[0], x.id],
      [prompts[1], y.id],
      [prompts[2], undefined],
      [prompts[0], undefined],
      [prompts[1], x.id],
    ] as const;
    const alone: number[][] = [];
    const stepsBefore = e.stats().steps.count;
    for (const [p, a] of runs) alone.push((await e.generate(greedy(p, a)).result).tokens);
    const aloneSteps = e.stats().steps.count - stepsBefore;
    // The adapters change the output (else this test could not tell them apart).
    expect(alone[0]).not.toEqual(alone[3]);
    expect(alone[1]).not.toEqual((await e.generate(greedy(prompts[1])).result).tokens);
    expect(alone[4]).not.toEqual(alone[1]);

    const before = e.stats().steps.count;
    const together = await Promise.all(runs.slice(0, 4).map(([p, a]) => e.generate(greedy(p, a)).result));
    // Shared steps: far fewer than the four runs took one after another.
    expect(e.stats().steps.count - before).toBeLessThan(aloneSteps * 0.5);
    together.forEach((r, i) => expect(r.tokens).toEqual(alone[i]));
    await e.unloadAdapter(x.id);
    await e.unloadAdapter(y.id);
  });

  it('a step without adapter rows runs exactly the base dispatches; one with them runs more', async () => {
    const e = await engine();
    const base = async () => {
      await e.generate({ tokens: [1, 403, 407], maxTokens: 3, temperature: 0, stopAtEndOfGeneration: false }).result;
      return e.stats().lastStepDispatches;
    };
    const plain = await base();
    const { x, y } = await loadTwo();
    expect(await base()).toBe(plain);
    await e.generate({ tokens: [1, 403, 407], maxTokens: 3, temperature: 0, stopAtEndOfGeneration: false, adapter: y.id }).result;
    const withY = e.stats().lastStepDispatches;
    await e.generate({ tokens: [1, 403, 407], maxTokens: 3, temperature: 0, stopAtEndOfGeneration: false, adapter: x.id }).result;
    const withX = e.stats().lastStepDispatches;
    // Y adapts v, o and down in 2 layers: there, A and B for 3 groups, and the gated activation as its own
    // pass before the down product (which otherwise folds it in; its LoRA needs the activated values).
    // X adapts all 4 groups in all 5 layers. (Norms are never folded into products on software adapters.)
    // On llvmpipe, an adapted QKV group also runs RoPE + KV store as its own pass again, not as the
    // product's tail (LoRA's B adds to the product's output after it).
    const rope = e.stats().adapter === 'llvmpipe' ? 1 : 0;
    expect(withY - plain).toBe(2 * (3 * 2 + 1 + rope));
    expect(withX - plain).toBe(5 * (4 * 2 + 1 + rope));
    expect(await base()).toBe(plain);
    await e.unloadAdapter(x.id);
    await e.unloadAdapter(y.id);
  });

  it('unload waits for the sequences running with it, refuses new ones meanwhile, and frees the id for good', async () => {
    const { e, x, y } = await loadTwo();
    const running = e.generate({ prompt: 'Once upon a time', maxTokens: 40, temperature: 0, stopAtEndOfGeneration: false, adapter: x.id });
    const alone = running.result.then((r) => r.tokens);
    let unloaded = false;
    const unloading = e.unloadAdapter(x.id).then(() => (unloaded = true));
    // Refused at once, while the running one goes on.
    let refused: unknown;
    try {
      e.generate(greedy('The little dog', x.id));
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(EngineInputError);
    expect((refused as Error).message).toMatch(/is being unloaded/);
    expect(e.adapters().map((a) => a.id)).toContain(x.id);
    const r = await running.result;
    expect(r.completionTokens).toBe(40);
    await unloading;
    expect(unloaded).toBe(true);
    expect(e.adapters().map((a) => a.id)).toEqual([y.id]);
    expect(() => e.generate(greedy('The little dog', x.id))).toThrow(/unknown adapter/);
    await expect(e.unloadAdapter(x.id)).rejects.toThrow(/unknown adapter/);
    // The slot is reused, the id is not; the new adapter in the old slot computes what it should.
    const again = await e.loadAdapter(encodeLoraAdapter(randomLoraSpec(e.config, { rank: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 11, bScale: 0.1 })));
    expect(again.id).not.toBe(x.id);
    expect((await e.generate({ prompt: 'Once upon a time', maxTokens: 40, temperature: 0, stopAtEndOfGeneration: false, adapter: again.id }).result).tokens).toEqual(await alone);
    await e.unloadAdapter(again.id);
    await e.unloadAdapter(y.id);
    expect(e.adapters()).toEqual([]);
  });

  it('the prefix cache keeps pages computed under each adapter (and none) apart', async () => {
    const { e, x, y } = await loadTwo();
    // Over three full pages of 16 positions.
    const prompt = 'Lily and Tom went to the park. They saw a big red ball under a tree, and a dog ran to get it first. Lily was sad, but her mom gave her a hug.';
    expect(e.tokenizer.encode(prompt).length).toBeGreaterThan(3 * 16);
    const run = (adapter?: string) => e.generate({ prompt, maxTokens: 12, temperature: 0, stopAtEndOfGeneration: false, adapter }).result;
    const base0 = await run();
    const x0 = await run(x.id);
    // Base pages of the very same prompt exist, but X must compute its own.
    expect(x0.timings.cachedPromptTokens).toBe(0);
    const x1 = await run(x.id);
    expect(x1.timings.cachedPromptTokens).toBeGreaterThanOrEqual(3 * 16);
    expect(x1.tokens).toEqual(x0.tokens);
    const y0 = await run(y.id);
    expect(y0.timings.cachedPromptTokens).toBe(0);
    const base1 = await run();
    expect(base1.timings.cachedPromptTokens).toBeGreaterThanOrEqual(3 * 16);
    expect(base1.tokens).toEqual(base0.tokens);
    expect(x0.tokens).not.toEqual(base0.tokens);
    // Unloading drops the adapter's pages from the cache; the base model's stay.
    const blocks = e.stats().prefixCache!.blocks;
    await e.unloadAdapter(x.id);
    expect(e.stats().prefixCache!.blocks).toBeLessThan(blocks);
    expect((await run()).timings.cachedPromptTokens).toBeGreaterThanOrEqual(3 * 16);
    await e.unloadAdapter(y.id);
  });

  it('the pool grows and reuses freed room without disturbing loaded adapters', async () => {
    const { e, x, y } = await loadTwo();
    const tokens = [1, 403, 407, 261, 378, 432, 383];
    const before = await e.logits(tokens, { adapter: x.id });
    const beforeY = await e.logits(tokens, { adapter: y.id });
    // Rank 64 on every target: ~1.5 MB each, past the pool's first allocation, so it grows (a copy on the GPU).
    const big = (seed: number) => encodeLoraAdapter(randomLoraSpec(e.config, { rank: 64, alpha: 64, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed, bScale: 0.02 }));
    const b1 = await e.loadAdapter(big(21));
    const b2 = await e.loadAdapter(big(22));
    expect(b1.bytes).toBeGreaterThan(1 << 20);
    expect(await e.logits(tokens, { adapter: x.id })).toEqual(before);
    const b1Logits = await e.logits(tokens, { adapter: b1.id });
    await e.unloadAdapter(b1.id);
    // Into the room b1 left: the same weights compute the same logits, and the others are untouched.
    const b3 = await e.loadAdapter(big(21));
    expect(await e.logits(tokens, { adapter: b3.id })).toEqual(b1Logits);
    expect(await e.logits(tokens, { adapter: x.id })).toEqual(before);
    expect(await e.logits(tokens, { adapter: y.id })).toEqual(beforeY);
    expect(await e.logits(tokens, { adapter: b2.id })).not.toEqual(b1Logits);
  });

  it('refuses more adapters than the engine holds, naming the limit', async () => {
    const e = await testEngine('stories260K.gguf', { grammars: 'in-process', contextLength: 64, maxAdapters: 2 });
    const bytes = (seed: number) => encodeLoraAdapter(randomLoraSpec(e.config, { rank: 2, alpha: 2, targets: ['q'], seed }));
    const a = await e.loadAdapter(bytes(1));
    await e.loadAdapter(bytes(2));
    await expect(e.loadAdapter(bytes(3))).rejects.toThrow(/2 adapters are loaded, the most this engine holds \(EngineOptions\.maxAdapters\); unload one first/);
    await e.unloadAdapter(a.id);
    await expect(e.loadAdapter(bytes(3))).resolves.toMatchObject({ rank: 2 });
  });
});
