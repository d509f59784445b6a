import { describe, expect, it } from 'vitest';
import { curveMaxTokens, curvePoint, curvePrompt, DEFAULT_CURVE, medianPoint, parseCurve, timeSequences, type CurvePoint } from '../../bench/curve.ts';
import { formatCurveTable } from '../../bench/curve-table.ts';

describe('parseCurve', () => {
  it('gives the default list for a bare flag and nothing when absent', () => {
    expect(parseCurve(true)).toEqual([...DEFAULT_CURVE]);
    expect(parseCurve('')).toEqual([1, 4, 8, 16]);
    expect(parseCurve(undefined)).toBeUndefined();
  });

  it('sorts and deduplicates the counts', () => {
    expect(parseCurve('8, 1,4,8')).toEqual([1, 4, 8]);
  });

  it('rejects counts outside 1..64 and non-integers, naming the flag', () => {
    for (const bad of ['0', '65', '2.5', 'x', '1,,4']) expect(() => parseCurve(bad)).toThrow(/--curve/);
  });
});

describe('curvePrompt', () => {
  const prompt = [1, 10, 11, 12, 13];

  it('keeps the first token and rotates the rest, so prompts share only that token', () => {
    expect(curvePrompt(prompt, 0)).toEqual(prompt);
    expect(curvePrompt(prompt, 1)).toEqual([1, 11, 12, 13, 10]);
    expect(curvePrompt(prompt, 5)).toEqual([1, 11, 12, 13, 10]);
    const all = [0, 1, 2, 3].map((i) => curvePrompt(prompt, i));
    expect(new Set(all.map((p) => p[1])).size).toBe(4);
    for (const p of all) expect([...p].sort()).toEqual([...prompt].sort());
  });

  it('leaves a one-token prompt alone', () => {
    expect(curvePrompt([7], 3)).toEqual([7]);
  });
});

describe('curveMaxTokens', () => {
  it('is the window plus room for a sequence that decodes while others prefill', () => {
    expect(curveMaxTokens(1, 64, 16)).toBe(20);
    expect(curveMaxTokens(16, 64, 16)).toBe(16 + 64 + 4);
  });
});

describe('curvePoint', () => {
  it('with one sequence gives the usual prefill and decode rates', () => {
    // 100 prompt tokens, first token at 50 ms, then one token every 10 ms.
    const p = curvePoint(100, 0, [[50, 60, 70, 80, 90]]);
    expect(p.sequences).toBe(1);
    expect(p.allFirstTokenMs).toBe(50);
    expect(p.prefillTokensPerSecond).toBeCloseTo(2000);
    expect(p.decodeTokensPerSecond).toBeCloseTo(100);
    expect(p.perSequenceDecodeTokensPerSecond).toBeCloseTo(100);
    expect(p.decodeTokensPerSequence).toBe(4);
  });

  it('times prefill to the last first token and decode from there, per sequence', () => {
    // Sequence 0 finished its prompt early and decoded while sequence 1 prefilled (tokens at 20, 30
    // count in neither phase); from 40 ms both decode one token per 20 ms step.
    const stamps = [
      [20, 30, 40, 60, 80],
      [40, 60, 80],
    ];
    const p = curvePoint(10, 0, stamps);
    expect(p.allFirstTokenMs).toBe(40);
    expect(p.prefillTokensPerSecond).toBeCloseTo((2 * 10 * 1000) / 40);
    expect(p.perSequenceDecodeTokensPerSecond).toBeCloseTo(50);
    expect(p.decodeTokensPerSecond).toBeCloseTo(100);
    expect(p.decodeTokensPerSequence).toBe(2);
  });

  it('opens a late-stamped sequence’s window at its next token without losing rate', () => {
    // Sequence 0's token of the step that ended prefill was stamped just before sequence 1's first.
    const p = curvePoint(10, 0, [
      [39.9, 60, 80, 100],
      [40, 60, 80],
    ]);
    expect(p.perSequenceDecodeTokensPerSecond).toBeCloseTo(50);
    expect(p.decodeTokensPerSecond).toBeCloseTo(100);
  });

  it('measures t0 from the given start and rejects a sequence without tokens', () => {
    expect(curvePoint(10, 1000, [[1010, 1020]]).allFirstTokenMs).toBe(10);
    expect(() => curvePoint(10, 0, [[10], []])).toThrow(/sequence 1/);
  });
});

describe('medianPoint', () => {
  it('takes each figure’s median and the fewest window tokens', () => {
    const base: CurvePoint = { sequences: 4, promptTokens: 8, prefillTokensPerSecond: 10, allFirstTokenMs: 5, decodeTokensPerSecond: 1, perSequenceDecodeTokensPerSecond: 0.25, decodeTokensPerSequence: 8 };
    const m = medianPoint([
      { ...base, prefillTokensPerSecond: 30, decodeTokensPerSecond: 3 },
      base,
      { ...base, prefillTokensPerSecond: 20, decodeTokensPerSecond: 9, decodeTokensPerSequence: 7 },
    ]);
    expect(m.prefillTokensPerSecond).toBe(20);
    expect(m.decodeTokensPerSecond).toBe(3);
    expect(m.decodeTokensPerSequence).toBe(7);
    expect(m.sequences).toBe(4);
  });
});

describe('timeSequences', () => {
  it('stops each sequence once it has the window’s tokens after every sequence started', async () => {
    // A fake engine: sequence i's first token comes at step i, then one token per step; the clock is the step.
    let clock = 0;
    const produced: number[] = [0, 0, 0];
    const stopped: boolean[] = [false, false, false];
    const gate: (() => void)[] = [];
    const stepper = (async () => {
      for (let step = 1; step <= 20; step++) {
        await new Promise((r) => setTimeout(r, 0));
        clock = step;
        for (const g of gate.splice(0)) g();
      }
    })();
    const { t0, stamps } = await timeSequences(
      3,
      4,
      (i) => ({
        tokens: (async function* () {
          for (;;) {
            await new Promise<void>((r) => gate.push(r));
            if (clock <= i) continue;
            produced[i]++;
            yield 1;
          }
        })(),
        stop: () => {
          stopped[i] = true;
        },
      }),
      () => clock,
    );
    await stepper;
    expect(t0).toBe(0);
    expect(stopped).toEqual([true, true, true]);
    // Every sequence started by step 3; each then ran to 4 tokens after its anchor.
    expect(stamps.map((s) => s[0])).toEqual([1, 2, 3]);
    const p = curvePoint(8, t0, stamps);
    expect(p.allFirstTokenMs).toBe(3);
    expect(p.decodeTokensPerSequence).toBe(4);
    expect(p.perSequenceDecodeTokensPerSecond).toBeCloseTo(1000);
    expect(p.decodeTokensPerSecond).toBeCloseTo(3000);
  });
});

describe('formatCurveTable', () => {
  it('prints a row per engine and count with the decode gain over one sequence', () => {
    const pt = (sequences: number, decode: number): CurvePoint => ({
      sequences,
      promptTokens: 64,
      prefillTokensPerSecond: 100 * sequences,
      allFirstTokenMs: 640,
      decodeTokensPerSecond: decode,
      perSequenceDecodeTokensPerSecond: decode / sequences,
      decodeTokensPerSequence: 16,
    });
    const text = formatCurveTable([{ engine: 'svc (WebGPU)', backend: 'llvmpipe', points: [pt(1, 2), pt(4, 6)] }]);
    const lines = text.split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^\| engine +\| backend +\| seqs \| prefill tok\/s \| all-first ms \| decode tok\/s \| decode\/seq tok\/s \| decode x1 \| window tok \|$/);
    expect(lines[3]).toMatch(/\| 4 +\| 400\.0 +\| 640 +\| 6\.0 +\| 1\.5 +\| 3\.00 +\| 16 +\|$/);
    expect(new Set(lines.map((l) => l.length)).size).toBe(1);
  });
});
