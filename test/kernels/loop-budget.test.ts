/**
 * llvmpipe's loop budget (kernels/runtime/loop-budget.ts): what the adapter does, and the attention
 * kernels at the position limit the engine enforces because of it.
 */
import { describe, expect, it } from 'vitest';
import { AttentionKernel, attentionPositionLimit } from '../../kernels/attention.ts';
import { KvStoreKernel } from '../../kernels/kv-store.ts';
import { COMPAT_CAPS } from '../../kernels/runtime/caps.ts';
import { checkLoopBudget, LLVMPIPE_LOOP_BUDGET } from '../../kernels/runtime/loop-budget.ts';
import { attentionRef } from '../helpers/attention-ref.ts';
import { readF32, readU32, runPass, testContext } from '../helpers/gpu.ts';
import { maxRelError, randomF32 } from '../helpers/random.ts';

const ctx = await testContext();
const limited = Number.isFinite(ctx.caps.loopBudget);

/** Runs `body` (WGSL statements adding to `n`) in one invocation and returns n. */
async function count(body: string, a: number): Promise<number> {
  const out = ctx.storage('loop-count', 16);
  const code = `
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
struct Params { a: u32 }
@group(1) @binding(0) var<uniform> p: Params;
@compute @workgroup_size(1) fn main() {
  var n = 0u;
  var arr: array<u32, 64>;
  ${body}
  out[0] = n;
  out[1] = arr[3];
}`;
  const k = ctx.kernel({ label: `loop-budget-${body.length}-${body.split('').reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7)}`, code, bindings: ['write'] });
  await runPass(ctx, (pass, arena) => {
    const s = arena.slot();
    arena.u32[s] = a;
    arena.dispatch(pass, k, k.bind([out]), s, 1);
  });
  return (await readU32(ctx, out, 1))[0];
}

describe('the loop budget', () => {
  it('is llvmpipe’s limiter, shared by every loop of an invocation, and nothing elsewhere', async () => {
    // Two loops one after the other, each well under the budget, 80 000 iterations together.
    const n = await count('for (var i = 0u; i < p.a; i++) { n++; } for (var i = 0u; i < p.a; i++) { n++; }', 40000);
    if (limited) {
      expect(ctx.caps.loopBudget).toBe(LLVMPIPE_LOOP_BUDGET);
      expect(n).toBeLessThanOrEqual(LLVMPIPE_LOOP_BUDGET);
      expect(n).toBeGreaterThan(LLVMPIPE_LOOP_BUDGET - 10);
    } else {
      expect(n).toBe(80000);
    }
  });

  it('does not count constant loops of up to 32 iterations inside a counted one (they are unrolled)', async () => {
    const loop = (trips: number) => `for (var i = 0u; i < p.a; i++) { for (var d = 0u; d < ${trips}u; d++) { arr[d] += i; n++; } }`;
    expect(await count(loop(32), 5000)).toBe(5000 * 32);
    // 64 trips stay a loop: 5000 x 65 iterations would be needed.
    const n64 = await count(loop(64), 5000);
    if (limited) expect(n64).toBeLessThan(5000 * 64);
    else expect(n64).toBe(5000 * 64);
  });

  it('refuses work beyond the budget, naming it', () => {
    expect(() => checkLoopBudget(COMPAT_CAPS, 'a test loop', LLVMPIPE_LOOP_BUDGET)).not.toThrow();
    expect(() => checkLoopBudget(COMPAT_CAPS, 'a test loop', LLVMPIPE_LOOP_BUDGET + 1)).toThrow(/a test loop needs 65536 loop iterations in one shader invocation; .* stops every shader after 65535/);
    expect(() => checkLoopBudget({ ...COMPAT_CAPS, loopBudget: Infinity }, 'a test loop', 1e9)).not.toThrow();
  });
});

describe('serial attention at the position limit', () => {
  // The scalar kernel (head dimension 6) counts 15 passes a position (two loops of 6 and itself), the vec4
  // kernel (8) one.
  for (const hd of [6, 8]) {
    it(`head dimension ${hd}: exact at the limit${limited ? ', wrong beyond the budget' : ''}`, async () => {
      const limit = attentionPositionLimit(COMPAT_CAPS, hd);
      expect(limit).toBe(hd === 6 ? Math.floor((65535 - 4 * 6 - 64) / 15) : 65535 - 4 * hd - 64);
      if (limited) expect(attentionPositionLimit(ctx.caps, hd)).toBe(limit);
      const [heads, kvHeads, pageSize] = [2, 1, 16];
      // The scalar kernel past the budget too (its cut-off lies just above the limit), on llvmpipe.
      const lengths = limited && hd === 6 ? [limit, limit + 200] : [limit];
      const maxPages = Math.ceil(Math.max(...lengths) / pageSize);
      const kvDim = kvHeads * hd;
      const n = Math.max(...lengths);
      const keys = randomF32(n * kvDim, 11);
      const values = randomF32(n * kvDim, 12);
      const kCache = ctx.storage('k', maxPages * pageSize * kvDim * 4);
      const vCache = ctx.storage('v', maxPages * pageSize * kvDim * 4);
      const pages = ctx.storage('pages', maxPages * 4, Uint32Array.from({ length: maxPages }, (_, i) => i));
      const all = (buf: Float32Array) => ctx.storage('src', buf.byteLength, buf);
      const kv = new KvStoreKernel(ctx);
      await runPass(ctx, (pass, arena) =>
        kv.encode(pass, arena, kv.bind(all(keys), all(values), ctx.storage('pos', n * 4, Uint32Array.from({ length: n }, (_, i) => i)), ctx.storage('seq', n * 4, new Uint32Array(n)), pages, kCache, vCache), {
          tokens: n,
          kvDim,
          pageSize,
          maxPages,
          kOffset: 0,
          vOffset: 0,
          srcStride: kvDim,
        }),
      );
      const att = new AttentionKernel(ctx, 'serial');
      const q = randomF32(heads * hd, 13, 1);
      const rows = (buf: Float32Array, len: number) => Array.from({ length: len }, (_, p) => buf.subarray(p * kvDim, (p + 1) * kvDim));
      const errors: number[] = [];
      for (const len of lengths) {
        const out = ctx.storage('out', heads * hd * 4);
        await runPass(ctx, (pass, arena) =>
          att.encode(pass, arena, att.bind(ctx.storage('q', q.byteLength, q), kCache, vCache, pages, ctx.storage('p', 4, Uint32Array.of(len - 1)), ctx.storage('s', 4, new Uint32Array(1)), out), {
            tokens: 1,
            heads,
            kvHeads,
            headDim: hd,
            pageSize,
            maxPages,
            scale: 1 / Math.sqrt(hd),
          }),
        );
        errors.push(maxRelError(await readF32(ctx, out, heads * hd), attentionRef(q, rows(keys, len), rows(values, len), heads, kvHeads, hd, 1 / Math.sqrt(hd))));
      }
      expect(errors[0]).toBeLessThan(1e-4);
      if (lengths.length > 1) expect(errors[1]).toBeGreaterThan(1e-3);
    });
  }
});
