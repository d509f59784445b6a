/**
 * llvmpipe's kernel warmer (engine/platform/kernel-warmer.ts): a trainer's kernels are compiled in a child
 * process, into Mesa's on-disk shader cache, so the trainer's own first dispatches on this thread compile
 * nothing; a warmer that fails, hangs or meets a kernel that does not build says so, and training goes on.
 */
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLoraTrainer } from '../../engine/train/gpu/index.ts';
import { llvmpipeKernelWarmer, mesaShaderCacheEnabled } from '../../engine/platform/kernel-warmer.ts';
import { LORA_TARGETS } from '../../engine/lora/adapter-file.ts';
import type { KernelSpec } from '../../kernels/runtime/context.ts';
import type { TrainingExample } from '../../engine/train/types.ts';
import { testEngine } from '../helpers/engine.ts';

// A cache of this file's own, empty, set before any device opens (the engine opens lazily, in the tests):
// Mesa reads it once, when llvmpipe starts in the process.
const cacheDir = mkdtempSync(join(tmpdir(), 'svc-mesa-cache-'));
process.env.MESA_SHADER_CACHE_DIR = cacheDir;
const scratch = mkdtempSync(join(tmpdir(), 'svc-warmer-'));
afterAll(() => {
  rmSync(cacheDir, { recursive: true, force: true });
  rmSync(scratch, { recursive: true, force: true });
});

/** Entries in Mesa's cache: one file each (Mesa's multi-file cache, its default). */
function cacheEntries(dir = cacheDir): number {
  let n = 0;
  for (const e of readdirSync(dir)) {
    const p = join(dir, e);
    n += statSync(p).isDirectory() ? cacheEntries(p) : 1;
  }
  return n;
}

/** Mesa writes its entries from a thread of its own: give it time before counting. */
const settle = () => new Promise((r) => setTimeout(r, 500));

function example(tokens: number[]): TrainingExample {
  const lossMask = new Uint8Array(tokens.length).fill(1);
  lossMask[tokens.length - 1] = 0;
  return { tokens: Int32Array.from(tokens), lossMask };
}

const engineOnLlvmpipe = async () => {
  const engine = await testEngine();
  return engine.device.choice === 'llvmpipe' ? engine : undefined;
};

describe('kernel warmer on llvmpipe', () => {
  it('mesaShaderCacheEnabled follows Mesa’s own switches', () => {
    expect(mesaShaderCacheEnabled({})).toBe(true);
    expect(mesaShaderCacheEnabled({ MESA_SHADER_CACHE_DISABLE: 'true' })).toBe(false);
    expect(mesaShaderCacheEnabled({ MESA_GLSL_CACHE_DISABLE: '1' })).toBe(false);
    expect(mesaShaderCacheEnabled({ MESA_SHADER_CACHE_DISABLE: 'false' })).toBe(true);
  });

  it('a trainer’s first step compiles its kernels in the child: its own dispatches add nothing to the cache', async () => {
    const engine = await engineOnLlvmpipe();
    if (!engine) return expect(engine).toBeUndefined(); // a GPU host: no warmer there (checked in the next test)
    const warm = engine.device.warmKernels;
    expect(warm, 'llvmpipe with the cache on has a warmer').toBeDefined();
    // After each warm: how many entries the cache held once the child was done.
    const afterWarm: number[] = [];
    engine.device.warmKernels = async (specs, caps) => {
      const r = await warm!(specs, caps);
      await settle();
      afterWarm.push(cacheEntries());
      return r;
    };
    try {
      await settle();
      const before = cacheEntries();
      const trainer = await createLoraTrainer(engine, { rank: 4, alpha: 8, targets: LORA_TARGETS }, { seed: 3 });
      try {
        const text = 'Once upon a time, there was a little girl named Lily.';
        const r = await trainer.step([example(engine.tokenizer.encode(text))], 1e-3);
        expect(Number.isFinite(r.loss)).toBe(true);
        await settle();
        // Twice: the dequantizing kernel when the trainer is made, the step's kernels before its first submit.
        expect(trainer.warmReports.length).toBe(2);
        for (const report of trainer.warmReports) expect(report).toMatchObject({ kernels: expect.any(Number) });
        const kernels = trainer.warmReports.reduce((n, rep) => n + ('kernels' in rep ? rep.kernels : 0), 0);
        expect(kernels).toBeGreaterThanOrEqual(15);
        expect(afterWarm[0], 'the child compiled into the cache').toBeGreaterThan(before);
        expect(cacheEntries(), 'every compile of this process after the warm was a cache hit').toBe(afterWarm[afterWarm.length - 1]);

        // A second trainer of the same shapes (its products' variants follow the sequence's length too):
        // its kernels were warmed once already, and nothing is sent again.
        const second = await createLoraTrainer(engine, { rank: 4, alpha: 8, targets: LORA_TARGETS }, { seed: 4 });
        await second.step([example(engine.tokenizer.encode(text))], 1e-3);
        second.destroy();
        for (const report of second.warmReports) expect(report).toEqual({ kernels: 0, ms: 0 });
      } finally {
        trainer.destroy();
      }
    } finally {
      engine.device.warmKernels = warm;
    }
  });

  it('a device without a warmer trains as before, with no reports', async () => {
    const engine = await testEngine();
    const warm = engine.device.warmKernels;
    engine.device.warmKernels = undefined;
    try {
      const trainer = await createLoraTrainer(engine, { rank: 2, alpha: 4, targets: ['q', 'v'] }, { seed: 5 });
      const r = await trainer.step([example(engine.tokenizer.encode('The cat sat.'))], 1e-3);
      trainer.destroy();
      expect(Number.isFinite(r.loss)).toBe(true);
      expect(trainer.warmReports).toEqual([]);
    } finally {
      engine.device.warmKernels = warm;
    }
  });

  it('says why when its child exits, hangs past the timeout, or meets a kernel that does not build; a trainer goes on', async () => {
    const engine = await testEngine();
    const spec = (label: string, code: string): KernelSpec => ({ label, code, bindings: ['write'], constants: {} });
    const good = spec('warm-good', '@group(0) @binding(0) var<storage, read_write> y: array<u32>;\n@compute @workgroup_size(1) fn main() { y[0] = 1u; }');
    const caps = engine.device.caps;

    const exits = join(scratch, 'exits.mjs');
    writeFileSync(exits, "process.stderr.write('no device for me\\n'); process.exit(3);\n");
    expect(await llvmpipeKernelWarmer({ entry: exits })([good], caps)).toEqual({ failed: expect.stringMatching(/exited \(code 3\) before it was done: no device for me/) });

    const hangs = join(scratch, 'hangs.mjs');
    writeFileSync(hangs, 'setInterval(() => {}, 1000);\n');
    expect(await llvmpipeKernelWarmer({ entry: hangs, timeoutMs: 1500 })([good], caps)).toEqual({ failed: expect.stringMatching(/ran past 2 s and was stopped/) });

    if (engine.device.choice !== 'llvmpipe') return;
    const warmer = llvmpipeKernelWarmer();
    const broken = spec('warm-broken', '@compute @workgroup_size(1) fn main() { let x: u32 = undefined_thing; }');
    expect(await warmer([good, broken], caps)).toEqual({ failed: expect.stringMatching(/could not compile them: .*warm-broken/) });
    // Nothing of a failed call counts as warmed; the good kernel alone then goes through.
    expect(await warmer([good, good], caps)).toMatchObject({ kernels: 1 });
    expect(await warmer([good], caps)).toEqual({ kernels: 0, ms: 0 });

    const warm = engine.device.warmKernels;
    engine.device.warmKernels = llvmpipeKernelWarmer({ entry: exits });
    try {
      const trainer = await createLoraTrainer(engine, { rank: 2, alpha: 4, targets: ['o'] }, { seed: 6 });
      const r = await trainer.step([example(engine.tokenizer.encode('A dog ran.'))], 1e-3);
      trainer.destroy();
      expect(Number.isFinite(r.loss)).toBe(true);
      expect(trainer.warmReports.length).toBeGreaterThan(0);
      for (const report of trainer.warmReports) expect(report).toMatchObject({ failed: expect.stringMatching(/exited/) });
    } finally {
      engine.device.warmKernels = warm;
    }
  });
});
