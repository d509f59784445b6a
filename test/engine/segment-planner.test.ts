import { describe, expect, it } from 'vitest';
import { SegmentPlanner } from '../../engine/model/segment-planner.ts';

describe('SegmentPlanner: how many layers a blocking submit may hold the thread for', () => {
  it('one layer per segment until a step of that kind has been timed', () => {
    const p = new SegmentPlanner(30, 8, 16);
    expect(p.layersPerSegment(1)).toBe(1);
    expect(p.layersPerSegment(64)).toBe(1);
  });

  it('decode steps: segments of about the target time from the measured per-layer time', () => {
    const p = new SegmentPlanner(30, 8, 16);
    p.observe(1, 60); // 2 ms per layer
    expect(p.layersPerSegment(1)).toBe(8);
    expect(p.layersPerSegment(8)).toBe(8);
    // A prefill chunk has not been timed yet.
    expect(p.layersPerSegment(9)).toBe(1);
  });

  it('prefill chunks: cost per layer grows with the chunk, so bigger chunks get fewer layers', () => {
    const p = new SegmentPlanner(30, 8, 16);
    p.observe(64, 30 * 64 * 0.05); // 0.05 ms per layer and token
    expect(p.layersPerSegment(64)).toBe(5); // 3.2 ms per layer
    expect(p.layersPerSegment(16)).toBe(20); // 0.8 ms per layer
    expect(p.layersPerSegment(400)).toBe(1); // 20 ms per layer: never less than one
  });

  it('a fast model fits in one segment; a slow one yields after every layer; estimates follow new steps', () => {
    const p = new SegmentPlanner(5, 8, 16);
    p.observe(1, 0.5);
    expect(p.layersPerSegment(1)).toBe(5);
    for (let i = 0; i < 20; i++) p.observe(1, 500);
    expect(p.layersPerSegment(1)).toBe(1);
  });

  it('target 0 always yields after every layer; nonsense timings are ignored', () => {
    const zero = new SegmentPlanner(30, 8, 0);
    zero.observe(1, 1);
    expect(zero.layersPerSegment(1)).toBe(1);
    const p = new SegmentPlanner(30, 8, 16);
    p.observe(1, NaN);
    p.observe(0, 10);
    p.observe(1, -5);
    expect(p.layersPerSegment(1)).toBe(1);
  });
});
