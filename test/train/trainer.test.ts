/**
 * The GPU LoRA trainer on real models: its loss is the engine's cross-entropy while B = 0, its loss and
 * whole gradient are the float64 CPU reference model's (test/train/reference.ts), its gradient is the
 * derivative of its own loss, it learns, it resumes exactly from a saved state, it takes turns with
 * inference, and its adapter file parses as a llama.cpp LoRA adapter.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/engine.ts';
import { createLoraTrainer } from '../../engine/train/gpu/index.ts';
import type { LoraTrainer, TrainingExample } from '../../engine/train/types.ts';
import { parseGguf } from '../../engine/gguf/parse.ts';
import { BytesSource } from '../../engine/loader/source.ts';
import { LORA_TARGETS, LORA_TARGET_TENSORS } from '../../engine/lora/adapter-file.ts';
import { dequantize } from '../../engine/gguf/quant/index.ts';
import { readFileSync } from 'node:fs';
import { sharedModel } from '../helpers/models.ts';
import * as ref from './reference.ts';

const trainers: LoraTrainer[] = [];
afterAll(() => trainers.forEach((t) => t.destroy()));

function example(tokens: number[], maskFrom = 1): TrainingExample {
  const lossMask = new Uint8Array(tokens.length);
  for (let t = maskFrom - 1; t < tokens.length - 1; t++) lossMask[t] = 1;
  return { tokens: Int32Array.from(tokens), lossMask };
}

/** Mean cross-entropy of the masked predictions from the engine's own logits. */
async function engineLoss(tokens: number[], mask: Uint8Array): Promise<number> {
  const engine = await testEngine();
  const logits = await engine.logits(tokens);
  let sum = 0;
  let n = 0;
  for (let t = 0; t < tokens.length - 1; t++) {
    if (!mask[t]) continue;
    const row = logits[t];
    let m = -Infinity;
    for (const v of row) m = Math.max(m, v);
    let z = 0;
    for (const v of row) z += Math.exp(v - m);
    sum += m + Math.log(z) - row[tokens[t + 1]];
    n++;
  }
  return sum / n;
}

describe('LoRA trainer on stories260K (F32)', () => {
  const text = 'Once upon a time, there was a little girl named Lily. She loved to play outside.';

  it('with B = 0 its loss is the cross-entropy of the engine’s logits', async () => {
    const engine = await testEngine();
    const tokens = engine.tokenizer.encode(text);
    const trainer = await createLoraTrainer(engine, { rank: 4, alpha: 8, targets: LORA_TARGETS }, { seed: 1 });
    trainers.push(trainer);
    const ex = example(tokens, 5);
    const ex2 = example(tokens.slice(0, 12), 1);
    const got = await trainer.evaluate([ex, ex2]);
    const n1 = ex.lossMask.reduce((s, v) => s + v, 0);
    const n2 = ex2.lossMask.reduce((s, v) => s + v, 0);
    const want = ((await engineLoss(tokens, ex.lossMask)) * n1 + (await engineLoss(tokens.slice(0, 12), ex2.lossMask)) * n2) / (n1 + n2);
    expect(got.tokens).toBe(n1 + n2);
    // The f32 base copy: every matrix of stories260K (all F32 in the file, so the same bytes again).
    const c = engine.config;
    const perLayer = c.dim * (2 * c.nHeads * c.headDim + 2 * c.nKvHeads * c.headDim) + 3 * c.dim * c.ffnDim;
    expect(trainer.memoryBytes.base).toBe(4 * (c.nLayers * perLayer + 2 * c.vocabSize * c.dim));
    expect(Math.abs(got.loss - want)).toBeLessThan(1e-4 * Math.max(1, want));
    // step reports the same loss before it updates
    const r = await trainer.step([ex, ex2], 1e-3);
    expect(Math.abs(r.loss - want)).toBeLessThan(1e-4 * Math.max(1, want));
    expect(r.gradNorm).toBeGreaterThan(0);
    expect(trainer.stepsTaken).toBe(1);
  });

  it('loss falls over 20 steps on a repeated example', async () => {
    const engine = await testEngine();
    const tokens = engine.tokenizer.encode('Label: happy. Label: happy. Label: happy.');
    const trainer = await createLoraTrainer(engine, { rank: 8, alpha: 16, targets: ['q', 'v', 'o', 'down'] }, { seed: 7 });
    trainers.push(trainer);
    const losses: number[] = [];
    for (let i = 0; i < 20; i++) losses.push((await trainer.step([example(tokens)], 1e-2)).loss);
    expect(losses[19]).toBeLessThan(losses[0] * 0.7);
  });
});

/** stories260K's weights as the CPU reference model reads them. */
async function referenceModel(): Promise<ref.RefModel> {
  const engine = await testEngine();
  const bytes = new Uint8Array(readFileSync(sharedModel('stories260K.gguf')));
  const gguf = await parseGguf(new BytesSource(bytes, 'stories260K.gguf'));
  const tensor = (name: string): ref.Vec => {
    const t = gguf.tensors.find((x) => x.name === name);
    if (!t) throw new Error(`no tensor ${name}`);
    return Float64Array.from(dequantize(t.type, bytes.subarray(t.offset, t.offset + t.byteSize), t.elements));
  };
  const c = engine.config;
  return {
    nLayers: c.nLayers,
    dim: c.dim,
    heads: c.nHeads,
    kvHeads: c.nKvHeads,
    headDim: c.headDim,
    ffn: c.ffnDim,
    vocab: c.vocabSize,
    eps: c.rmsEps,
    rope: { nRot: c.rope.nRot, neox: c.rope.neox, base: c.rope.base, freqScale: c.rope.freqScale },
    embedding: tensor('token_embd.weight'),
    head: tensor('output.weight'),
    outputNorm: tensor('output_norm.weight'),
    layers: Array.from({ length: c.nLayers }, (_, l) => ({
      attnNorm: tensor(`blk.${l}.attn_norm.weight`),
      ffnNorm: tensor(`blk.${l}.ffn_norm.weight`),
      w: Object.fromEntries(LORA_TARGETS.map((t) => [t, tensor(`blk.${l}.${LORA_TARGET_TENSORS[t]}.weight`)])) as Record<ref.RefTarget, ref.Vec>,
    })),
  };
}

/** A copy of a saved state with parameter `i` moved by `delta` (parameters follow the JSON header). */
function nudged(state: Uint8Array, i: number, delta: number): Uint8Array {
  const out = state.slice();
  const headerBytes = new DataView(out.buffer).getUint32(8, true);
  const params = new Float32Array(out.buffer, 12 + headerBytes);
  params[i] += delta;
  return out;
}

describe('LoRA trainer gradients, state and adapter file (stories260K)', () => {
  it('its gradient matches finite differences of its own loss', async () => {
    const engine = await testEngine();
    const tokens = engine.tokenizer.encode('The cat sat on the mat and looked at the sun.');
    const ex = example(tokens, 3);
    const trainer = await createLoraTrainer(engine, { rank: 4, alpha: 8, targets: LORA_TARGETS }, { seed: 3, optimizer: { clipNorm: 0 } });
    trainers.push(trainer);
    // One step so B ≠ 0 (with B = 0 every gradient of A is 0), then a step at learning rate 0 (weight decay
    // times 0 as well) leaves the parameters and records the gradient there.
    await trainer.step([ex], 2e-2);
    const state = await trainer.saveState();
    const base = await trainer.step([ex], 0);
    const grads = await trainer.readGradients();
    const params = await trainer.readParameters();
    const saved = new Float32Array(state.buffer, 12 + new DataView(state.buffer).getUint32(8, true), trainer.parameterCount);
    expect(Array.from(params.slice(0, 64))).toEqual(Array.from(saved.slice(0, 64)));
    expect(Math.abs((await trainer.evaluate([ex])).loss - base.loss)).toBeLessThan(1e-6);
    // The largest A and B gradients of a few matrices in different layers and roles.
    const picks: number[] = [];
    for (const slot of [trainer.layout.slots[0], trainer.layout.slots[9], trainer.layout.slots[trainer.layout.slots.length - 1], trainer.layout.slots[17]]) {
      for (const [off, len] of [
        [slot.aOffset, trainer.layout.rank * slot.inDim],
        [slot.bOffset, slot.outDim * trainer.layout.rank],
      ]) {
        let best = off;
        for (let i = off; i < off + len; i++) if (Math.abs(grads[i]) > Math.abs(grads[best])) best = i;
        picks.push(best);
      }
    }
    const h = 1e-2;
    for (const i of picks) {
      await trainer.loadState(nudged(state, i, h));
      const up = (await trainer.evaluate([ex])).loss;
      await trainer.loadState(nudged(state, i, -h));
      const down = (await trainer.evaluate([ex])).loss;
      const fd = (up - down) / (2 * h);
      expect(Math.abs(fd - grads[i]), `parameter ${i}: finite difference ${fd}, gradient ${grads[i]}`).toBeLessThan(0.01 * Math.abs(grads[i]) + 5e-5);
    }
  });

  it('its loss and whole gradient equal the float64 CPU reference model’s, itself checked by finite differences', async () => {
    const engine = await testEngine();
    const model = await referenceModel();
    const batch = [example(engine.tokenizer.encode('Sam found a shiny stone.'), 3), example(engine.tokenizer.encode('The sun was warm and the sky was blue.'), 1)];
    const trainer = await createLoraTrainer(engine, { rank: 4, alpha: 6, targets: LORA_TARGETS }, { seed: 12, optimizer: { clipNorm: 0 } });
    trainers.push(trainer);
    // Random A and B (B ≠ 0, so every gradient is live), loaded as a state.
    const state = await trainer.saveState();
    const params = new Float32Array(state.buffer, 12 + new DataView(state.buffer).getUint32(8, true), trainer.parameterCount);
    params.set(Float32Array.from(ref.random(trainer.parameterCount, 77, 0.1)));
    await trainer.loadState(state);
    const lora: ref.RefLora = { rank: 4, scale: 6 / 4, a: new Map(), b: new Map() };
    for (const s of trainer.layout.slots) {
      lora.a.set(`${s.layer}.${s.target}`, Float64Array.from(params.subarray(s.aOffset, s.aOffset + 4 * s.inDim)));
      lora.b.set(`${s.layer}.${s.target}`, Float64Array.from(params.subarray(s.bOffset, s.bOffset + 4 * s.outDim)));
    }
    const want = ref.modelLossAndGrads(model, lora, batch);
    const got = await trainer.step(batch, 0);
    expect(got.tokens).toBe(want.counted);
    expect(Math.abs(got.loss - want.loss)).toBeLessThan(1e-4 * want.loss);
    const grads = await trainer.readGradients();
    let scale = 0;
    for (const g of [...want.da.values(), ...want.db.values()]) for (const v of g) scale = Math.max(scale, Math.abs(v));
    let worst = 0;
    for (const s of trainer.layout.slots) {
      const key = `${s.layer}.${s.target}`;
      want.da.get(key)!.forEach((v, i) => (worst = Math.max(worst, Math.abs(grads[s.aOffset + i] - v))));
      want.db.get(key)!.forEach((v, i) => (worst = Math.max(worst, Math.abs(grads[s.bOffset + i] - v))));
    }
    // Measured: 3e-6 on llvmpipe, 2.5e-3 on SwiftShader, whose sin/cos may be off by 2^-11 (Vulkan allows
    // it); a missing or misrouted term is off by 0.1 or more.
    expect(worst / scale).toBeLessThan(5e-3);
    // The reference's own gradient against float64 finite differences, for an A and a B entry.
    const h = 1e-5;
    for (const [which, key, i] of [
      ['a', '0.q', 5],
      ['b', '4.down', 17],
    ] as const) {
      const at = (delta: number) => {
        const moved = { ...lora, a: new Map(lora.a), b: new Map(lora.b) };
        const v = Float64Array.from(lora[which].get(key)!);
        v[i] += delta;
        moved[which].set(key, v);
        return ref.modelLossAndGrads(model, moved, batch).loss;
      };
      const fd = (at(h) - at(-h)) / (2 * h);
      const analytic = (which === 'a' ? want.da : want.db).get(key)![i];
      expect(Math.abs(fd - analytic)).toBeLessThan(1e-6 * Math.max(1, Math.abs(analytic)) + 1e-8);
    }
  });

  it('saveState → a new trainer → loadState continues exactly as the first would', async () => {
    const engine = await testEngine();
    const tokens = engine.tokenizer.encode('Tom had a red ball. He threw it high.');
    const batch = [example(tokens, 2), example(tokens.slice(0, 9), 1)];
    const shape = { rank: 2, alpha: 4, targets: ['k', 'up', 'gate'] as const };
    const a = await createLoraTrainer(engine, { ...shape, targets: [...shape.targets] }, { seed: 11 });
    trainers.push(a);
    for (let i = 0; i < 3; i++) await a.step(batch, 5e-3);
    const state = await a.saveState();
    const next = [await a.step(batch, 5e-3), await a.step(batch, 4e-3)];
    // Steps called together run one after another, exactly as awaited ones do.
    const c = await createLoraTrainer(engine, { ...shape, targets: [...shape.targets] }, { seed: 1 });
    trainers.push(c);
    await c.loadState(state);
    expect(await Promise.all([c.step(batch, 5e-3), c.step(batch, 4e-3)])).toEqual(next);
    expect(c.stepsTaken).toBe(5);
    const b = await createLoraTrainer(engine, { ...shape, targets: ['gate', 'k', 'up'] }, { seed: 99 });
    trainers.push(b);
    await b.loadState(state);
    expect(b.stepsTaken).toBe(3);
    const again = [await b.step(batch, 5e-3), await b.step(batch, 4e-3)];
    expect(again).toEqual(next);
    expect(b.stepsTaken).toBe(5);
    const other = await createLoraTrainer(engine, { rank: 2, alpha: 4, targets: ['k', 'up'] }, { seed: 1 });
    trainers.push(other);
    await expect(other.loadState(state)).rejects.toThrow(/other matrices/);
    await expect(other.loadState(state.subarray(0, 40))).rejects.toThrow(/truncated|bytes/);
  });

  it('exportAdapter writes a llama.cpp LoRA GGUF with every adapted matrix', async () => {
    const engine = await testEngine();
    const trainer = await createLoraTrainer(engine, { rank: 3, alpha: 6, targets: ['q', 'v', 'down'] }, { seed: 5 });
    trainers.push(trainer);
    await trainer.step([example(engine.tokenizer.encode('One day a bird sang.'))], 1e-2);
    const bytes = await trainer.exportAdapter({ 'training.note': 'test' });
    const gguf = await parseGguf(new BytesSource(bytes, 'adapter.gguf'));
    expect(gguf.metadata.string('general.type')).toBe('adapter');
    expect(gguf.metadata.string('adapter.type')).toBe('lora');
    expect(gguf.metadata.string('general.architecture')).toBe('llama');
    expect(gguf.metadata.number('adapter.lora.alpha')).toBe(6);
    expect(gguf.metadata.string('training.note')).toBe('test');
    const cfg = engine.config;
    const byName = new Map(gguf.tensors.map((t) => [t.name, t]));
    expect(gguf.tensors.length).toBe(cfg.nLayers * 3 * 2);
    for (let l = 0; l < cfg.nLayers; l++) {
      expect(byName.get(`blk.${l}.attn_q.weight.lora_a`)?.dims).toEqual([cfg.dim, 3]);
      expect(byName.get(`blk.${l}.attn_q.weight.lora_b`)?.dims).toEqual([3, cfg.nHeads * cfg.headDim]);
      expect(byName.get(`blk.${l}.attn_v.weight.lora_b`)?.dims).toEqual([3, cfg.nKvHeads * cfg.headDim]);
      expect(byName.get(`blk.${l}.ffn_down.weight.lora_a`)?.dims).toEqual([cfg.ffnDim, 3]);
      expect(byName.get(`blk.${l}.ffn_down.weight.lora_b`)?.dims).toEqual([3, cfg.dim]);
    }
    // The file's A and B are the trainer's parameters, and the step moved B off zero.
    const params = await trainer.readParameters();
    const slot = trainer.layout.find(1, 'down')!;
    const t = byName.get(`blk.${slot.layer}.ffn_down.weight.lora_b`)!;
    const b = new Float32Array(bytes.slice(t.offset, t.offset + t.byteSize).buffer);
    expect(Array.from(b)).toEqual(Array.from(params.subarray(slot.bOffset, slot.bOffset + slot.outDim * 3)));
    expect(b.some((v) => v !== 0)).toBe(true);
  });

  it('sending the counted positions through the output head in chunks changes nothing', async () => {
    const engine = await testEngine();
    const tokens = engine.tokenizer.encode('A small dog ran to the big tree and barked at a bird.');
    const batch = [example(tokens, 2), example(tokens.slice(0, 10), 3)];
    const shape = { rank: 4, alpha: 8, targets: ['q', 'down'] as ('q' | 'down')[] };
    const whole = await createLoraTrainer(engine, shape, { seed: 6 });
    const chunked = await createLoraTrainer(engine, shape, { seed: 6, headRows: 3 });
    trainers.push(whole, chunked);
    for (const lr of [1e-2, 1e-2]) {
      const [a, b] = [await whole.step(batch, lr), await chunked.step(batch, lr)];
      expect(Math.abs(a.loss - b.loss)).toBeLessThan(1e-6);
      expect(Math.abs(a.gradNorm - b.gradNorm)).toBeLessThan(1e-6 * a.gradNorm);
    }
    const [ga, gb] = [await whole.readGradients(), await chunked.readGradients()];
    let worst = 0;
    for (let i = 0; i < ga.length; i++) worst = Math.max(worst, Math.abs(ga[i] - gb[i]));
    expect(worst).toBeLessThan(1e-7);
    expect((await chunked.evaluate(batch)).loss).toBeCloseTo((await whole.evaluate(batch)).loss, 6);
  });

  it('a batch split over several forward passes gives the loss and gradient of one pass', async () => {
    const engine = await testEngine();
    const tokens = engine.tokenizer.encode('Mia had a little boat. She sailed it on the pond every day.');
    const batch = [example(tokens, 4), example(tokens.slice(0, 14), 2), example(tokens.slice(3), 5), example(tokens.slice(0, 9), 1)];
    const shape = { rank: 4, alpha: 8, targets: ['v', 'o', 'up'] as ('v' | 'o' | 'up')[] };
    const one = await createLoraTrainer(engine, shape, { seed: 13 });
    const split = await createLoraTrainer(engine, shape, { seed: 13, maxTokens: tokens.length });
    trainers.push(one, split);
    for (let i = 0; i < 2; i++) {
      const [a, b] = [await one.step(batch, 1e-2), await split.step(batch, 1e-2)];
      expect(b.tokens).toBe(a.tokens);
      expect(Math.abs(a.loss - b.loss)).toBeLessThan(1e-5 * a.loss);
      expect(Math.abs(a.gradNorm - b.gradNorm)).toBeLessThan(1e-4 * a.gradNorm);
    }
    const [ga, gb] = [await one.readGradients(), await split.readGradients()];
    let worst = 0;
    let scale = 0;
    for (let i = 0; i < ga.length; i++) {
      worst = Math.max(worst, Math.abs(ga[i] - gb[i]));
      scale = Math.max(scale, Math.abs(ga[i]));
    }
    expect(worst / scale).toBeLessThan(1e-4);
    const [ea, eb] = [await one.evaluate(batch), await split.evaluate(batch)];
    expect(eb.tokens).toBe(ea.tokens);
    expect(Math.abs(ea.loss - eb.loss)).toBeLessThan(1e-5 * ea.loss);
  });

  it('refuses bad shapes and batches by name', async () => {
    const engine = await testEngine();
    await expect(createLoraTrainer(engine, { rank: 0, alpha: 1, targets: ['q'] }, { seed: 1 })).rejects.toThrow(/rank/);
    await expect(createLoraTrainer(engine, { rank: 2, alpha: 1, targets: ['qkv' as never] }, { seed: 1 })).rejects.toThrow(/unknown LoRA target "qkv"/);
    const trainer = await createLoraTrainer(engine, { rank: 2, alpha: 4, targets: ['q'] }, { seed: 1, maxTokens: 16 });
    trainers.push(trainer);
    await expect(trainer.step([example(Array.from({ length: 17 }, (_, i) => i + 3))], 1e-3)).rejects.toThrow(/17 tokens/);
    await expect(trainer.step([{ tokens: Int32Array.from([1, 2, 3]), lossMask: new Uint8Array(3) }], 1e-3)).rejects.toThrow(/no counted positions/);
    await expect(trainer.evaluate([example([1, 9999])])).rejects.toThrow(/9999 is not a token id/);
  });
});

describe('LoRA trainer beside inference (stories260K)', () => {
  it('a generation started during a long step finishes before the step does, with the base model’s tokens', async () => {
    const engine = await testEngine();
    const prompt = engine.tokenizer.encode('Once upon a time');
    const alone = await engine.generate({ tokens: prompt, maxTokens: 4, temperature: 0, stopAtEndOfGeneration: false }).result;
    const trainer = await createLoraTrainer(engine, { rank: 4, alpha: 8, targets: LORA_TARGETS }, { seed: 4, maxTokens: 64 });
    trainers.push(trainer);
    const seq = engine.tokenizer.encode('Lily and Tom went to the park. They played on the swings and ate cake.');
    const batch = Array.from({ length: 6 }, (_, i) => example(seq.slice(0, 20 + i), 2));
    const order: string[] = [];
    const step = trainer.step(batch, 1e-3).then((r) => (order.push('step'), r));
    const gen = engine.generate({ tokens: prompt, maxTokens: 4, temperature: 0, stopAtEndOfGeneration: false }).result.then((r) => (order.push('generation'), r));
    const [r, g] = await Promise.all([step, gen]);
    expect(order).toEqual(['generation', 'step']);
    expect(Number.isFinite(r.loss)).toBe(true);
    // The trainer never touches the engine's weights: serving is unchanged while it trains.
    expect(g.tokens).toEqual(alone.tokens);
  });
});

describe('LoRA trainer on TinyStories-656K (Q8_0, tied embeddings)', () => {
  it('loss falls', async () => {
    const engine = await testEngine('TinyStories-656K-Q8_0.gguf');
    expect(engine.config.tiedEmbeddings).toBe(true);
    const tokens = engine.tokenizer.encode('Question: what color is the sky? Answer: Label: blue.');
    const trainer = await createLoraTrainer(engine, { rank: 4, alpha: 8, targets: LORA_TARGETS }, { seed: 2 });
    trainers.push(trainer);
    const ex = example(tokens, 4);
    const first = await trainer.step([ex], 1e-2);
    let last = first;
    for (let i = 0; i < 14; i++) last = await trainer.step([ex], 1e-2);
    expect(Number.isFinite(first.loss)).toBe(true);
    expect(last.loss).toBeLessThan(first.loss * 0.6);
  });
});
