/**
 * The engine's context length on an adapter that ends long loops (llvmpipe's loop budget,
 * kernels/runtime/loop-budget.ts): a context its attention kernel cannot walk in one invocation is refused
 * at load, naming the limit, instead of attending to part of it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { synthModel } from '../../bench/synth/model.ts';
import { PRESETS } from '../../bench/synth/presets.ts';
import { writeGguf } from '../../engine/gguf/write.ts';
import { writeFileAtomically } from '../../engine/loader/file-sink-node.ts';
import { loadEngine } from '../../engine/node.ts';
import { attentionPositionLimit } from '../../kernels/attention.ts';
import { testContext } from '../helpers/gpu.ts';

const caps = (await testContext()).caps;
const dir = mkdtempSync(join(tmpdir(), 'svc-ctx-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!Number.isFinite(caps.loopBudget))('context length under the loop budget', () => {
  it('refuses a context longer than attention can walk, and loads one at the limit', async () => {
    // The tiny preset (head dimension 16) claiming a 128K context.
    const preset = { ...PRESETS.tiny, contextLength: 131072 };
    const path = join(dir, 'tiny-128k.gguf');
    const synth = synthModel(preset, 'f32', 1, 'tiny');
    await writeFileAtomically(path, (sink) => writeGguf(sink, synth.spec, synth.tensorData));
    const limit = attentionPositionLimit(caps, preset.headDim);
    expect(limit).toBe(caps.loopBudget - 4 * 16 - 64);
    await expect(loadEngine({ model: path, contextLength: limit + 1, maxSequences: 1 })).rejects.toThrow(
      new RegExp(`contextLength ${limit + 1} is more than attention can cover on this adapter: ${limit} positions`),
    );
    const engine = await loadEngine({ model: path, contextLength: limit, maxSequences: 1, kvCacheBytes: 0 });
    try {
      expect(engine.info.contextLength).toBe(limit);
    } finally {
      await engine.dispose();
    }
  });
});
