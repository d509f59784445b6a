/**
 * llvmpipe runs a command buffer inside queue.submit on the calling thread, so one submit per step
 * would hold the event loop (HTTP, timers) for a whole forward pass. There the engine submits segments
 * of layers and yields in between: other work gets the thread between them. With yieldEveryMs 0 a
 * segment is one layer, whatever the model's speed (SegmentPlanner sizes them otherwise).
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { WebGpuEngine } from '../../engine/engine.ts';
import { loadEngine } from '../../engine/node.ts';
import { sharedModel } from '../helpers/models.ts';

const STORIES_260K = sharedModel('stories260K.gguf');

const LAYERS = 5; // stories260K

async function ticksDuringGeneration(engine: WebGpuEngine): Promise<{ ticks: number; steps: number }> {
  let ticks = 0;
  let running = true;
  const tick = () => {
    if (!running) return;
    ticks++;
    setImmediate(tick);
  };
  setImmediate(tick);
  const r = await engine.generate({ prompt: 'Once upon a time', maxTokens: 8, temperature: 0, stopAtEndOfGeneration: false }).result;
  running = false;
  // One step for the prompt, then one per token after the first.
  return { ticks, steps: r.completionTokens };
}

describe('blocking-submit adapters yield between layers', () => {
  const engines: WebGpuEngine[] = [];
  afterAll(async () => {
    for (const e of engines) await e.dispose();
  });

  it('llvmpipe: the event loop runs between the layers of every step', async () => {
    const engine = await loadEngine({ model: STORIES_260K, adapter: 'llvmpipe', grammars: 'in-process', yieldEveryMs: 0 });
    engines.push(engine);
    expect(engine.device.blockingSubmit).toBe(true);
    await ticksDuringGeneration(engine); // compiles the pipelines
    const before = engine.stats().steps;
    const { ticks, steps } = await ticksDuringGeneration(engine);
    expect(ticks).toBeGreaterThanOrEqual(steps * (LAYERS - 1));
    // Every step is counted, and the device's idle share is part of the steps' time, not more.
    const after = engine.stats().steps;
    expect(after.count - before.count).toBe(steps);
    const idle = after.deviceIdleMs - before.deviceIdleMs;
    expect(idle).toBeGreaterThan(0);
    expect(idle).toBeLessThan(after.ms - before.ms);
  });
});
