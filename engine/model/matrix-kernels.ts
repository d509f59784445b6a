/**
 * MatrixKernels on the packed-weight kernels of kernels/: layouts and shards from kernels/quant, products
 * through WeightMatmul (matvec for decode-sized batches, tiled for prefill), lookups through EmbeddingKernel.
 */
import { EmbeddingKernel } from '../../kernels/embedding.ts';
import { CPU_MATVEC_UP_TO, WeightMatmul } from '../../kernels/matmul-select.ts';
import { tiledRowsFor } from '../../kernels/matmul.ts';
import { MAX_MATVEC_T, matvecVariant } from '../../kernels/matvec.ts';
import { BLOCK_WALK_TYPES, deviceLayout } from '../../kernels/quant/layouts.ts';
import { planRowShards } from '../../kernels/quant/shards.ts';
import type { KernelContext } from '../../kernels/runtime/context.ts';
import { memoize } from '../../kernels/runtime/memo.ts';
import { GgmlType, typeName } from '../../ggml/types.ts';
import type { Activation } from '../../kernels/activation.ts';
import type { BoundProduct, MatrixIo, MatrixKernels, WeightMatrix } from './matrix.ts';
import { createQuantizedXProducts } from './quantized-x-products.ts';
import { xqGroup, type XqMode } from '../../kernels/quantize-x.ts';
import { tailCounterWords, tailSuffix, type ProductTail } from '../../kernels/matvec-tail.ts';
import { maxWeightStoreBytes, weightStoreBytes } from '../../kernels/runtime/weights.ts';

/**
 * `tails`: let decode products take io.tail where the device's kernels can (EngineOptions.productTails).
 * `widths`: the model's product output widths, from which CPU rasterisers' tiled products take their
 * register block (tiledRowsFor). `int8Dot`: ProductOptions.int8Dot for every product (EngineOptions.int8Dot).
 */
export function createMatrixKernels(ctx: KernelContext, opts: { tails?: boolean; widths?: readonly number[]; int8Dot?: boolean } = {}): MatrixKernels {
  const tiledRows = ctx.caps.software && opts.widths ? tiledRowsFor(ctx.caps, opts.widths) : undefined;
  const products = new Map<string, WeightMatmul>();
  const rowsVariant = matvecVariant(ctx.caps) === 'rows';
  const productFor = (t: GgmlType, bias: boolean, glu: Activation | undefined, norm: boolean, xq8 = false, tail?: ProductTail) => {
    const key = `${t}${bias ? '+bias' : ''}${glu ? `+${glu}` : ''}${norm ? '+norm' : ''}${xq8 ? '+xq8' : ''}${tailSuffix(tail)}`;
    let p = products.get(key);
    if (!p) {
      products.set(key, (p = new WeightMatmul(ctx, t, { bias, glu, norm, xq8, tail, tiledRows, int8Dot: opts.int8Dot })));
      // Compile every variant (one matvec per row count, plus the tiled product) now, at load, so no
      // request pays for a pipeline the first time a batch of that size occurs. A product with a tail
      // has only the matrix-vector kernels; longer steps take the plain product and the tail's own pass.
      const upTo = tail ? p.tailUpTo : norm ? MAX_MATVEC_T : MAX_MATVEC_T + 1;
      for (let rows = 1; rows <= upTo; rows++) p.kernelFor(rows);
    }
    return p;
  };
  // Decode products on CPU rasterisers fold the pass after them into their last invocations
  // (kernels/matvec-tail.ts): on llvmpipe a dispatch costs 25-60 µs, mostly waking its threads. Only
  // where atomics order the stores before them (GpuCaps.orderedAtomics).
  const tails = rowsVariant && ctx.caps.orderedAtomics && (opts.tails ?? true);
  // The norm folds into the GPU matrix-vector variants only; CPU rasterisers keep the norm pass (there a
  // second pass over x per invocation would cost more than the dispatch it saves).
  const fuseNormUpTo = rowsVariant ? 0 : MAX_MATVEC_T;
  // A product recomputes act(gate) * up in every invocation. Measured on llvmpipe (SmolLM2-135M shapes,
  // 64-token prefill): the fused down product took 13.6 ms a layer against 7.8 ms for products of its
  // size; fused and unfused decode (one row) measured alike, so decode keeps the dispatch fewer. Beyond
  // the rows where CPU products turn tiled, the activation runs as its own pass.
  const fuseGluUpTo = ctx.caps.software ? CPU_MATVEC_UP_TO : Infinity;
  const lookupFor = memoize((t: GgmlType) => new EmbeddingKernel(ctx, t));
  const quantizedXMode = (w: WeightMatrix): XqMode | undefined => {
    const mode = ctx.caps.software ? BLOCK_WALK_TYPES.get(w.type) : undefined;
    return mode && w.cols % xqGroup(mode) === 0 ? mode : undefined;
  };
  const product = (w: WeightMatrix, x: GPUBuffer, y: GPUBuffer, io: MatrixIo): BoundProduct => {
    if (io.norm && (fuseNormUpTo === 0 || w.cols % 4 !== 0)) throw new Error(`${w.name}: this device's products cannot fold in the norm`);
    if (io.xq8 && (!quantizedXMode(w) || io.glu || io.norm)) throw new Error(`${w.name}: this device's ${typeName(w.type)} products cannot read quantized x`);
    // f32 x that a quantize pass can turn into int8 blocks is read that way (quantized-x-products.ts).
    if (!io.xq8 && quantizedX?.applies(w, io)) return quantizedX.bind(w, x, y, io);
    const mm = productFor(w.type, w.bias !== undefined, io.glu?.activation, io.norm !== undefined, io.xq8);
    for (const s of w.shards) mm.prepare(w.cols, s.rows);
    // A counter buffer too short for the tail's parts would leave some never run: stale rows, no error.
    if (io.tail && io.tail.buffers[0].size < 4 * tailCounterWords(io.tail.tail, io.tail.params)) throw new Error(`${w.name}: the tail's counter buffer holds ${io.tail.buffers[0].size / 4} words, not the ${tailCounterWords(io.tail.tail, io.tail.params)} its parts need`);
    // The tail runs in the last shard's dispatch, after the others.
    const withTail = tails && io.tail ? productFor(w.type, w.bias !== undefined, io.glu?.activation, io.norm !== undefined, io.xq8, io.tail.tail) : undefined;
    // A buffer short of the layout's whole groups would have kernels read past its end (robust access is
    // off on CPU rasterisers, so that is a crash, not zeros).
    const layout = deviceLayout(ctx.caps, w.type);
    for (const s of w.shards) {
      const held = weightStoreBytes(s.store);
      if (held < layout.bufferBytes(s.rows, w.cols)) throw new Error(`${w.name}: a shard of ${s.rows} rows holds ${held} bytes, not the ${layout.bufferBytes(s.rows, w.cols)} its layout needs`);
    }
    const bound = w.shards.map((s, i) => {
      const more = { bias: w.bias, norm: io.norm?.weight };
      const last = i === w.shards.length - 1;
      return {
        group: mm.bind(s.store, x, y, more),
        tailGroup: last && withTail ? withTail.bind(s.store, x, y, { ...more, tail: io.tail!.buffers }) : undefined,
        rowOffset: s.rowStart,
        n: s.rows,
      };
    });
    return {
      encode(pass, arena, tokens, tail = false) {
        const fused = tail && withTail !== undefined && tokens <= withTail.tailUpTo;
        for (const b of bound) {
          const runsTail = fused && b.tailGroup !== undefined;
          (runsTail ? withTail : mm).encode(pass, arena, runsTail ? b.tailGroup! : b.group, {
            t: tokens,
            n: b.n,
            k: w.cols,
            xOffset: io.xOffset,
            xStride: io.xStride,
            yOffset: io.yOffset,
            yStride: io.yStride,
            rowOffset: b.rowOffset,
            accumulate: io.accumulate,
            gluUp: io.glu?.upOffset,
            normEps: io.norm?.eps,
            tail: runsTail ? io.tail!.params : undefined,
          });
        }
        return fused;
      },
    };
  };
  const quantizedX = createQuantizedXProducts(ctx, quantizedXMode, product);
  const maxBinding = maxWeightStoreBytes(ctx.caps);

  return {
    quantizedX: quantizedXMode,
    fuseNormUpTo,
    fuseGluUpTo,
    tails,
    layout(type, rows, cols) {
      const layout = deviceLayout(ctx.caps, type);
      const shards = planRowShards(type, rows, cols, maxBinding, ctx.caps.minStorageOffsetAlignment, layout.rowGroup);
      return { gpuRowBytes: layout.rowBytes(cols), shardRows: shards[0].rows, rowGroup: layout.rowGroup, bufferBytes: (n) => layout.bufferBytes(n, cols) };
    },
    repack: (type, raw, rows, cols) => deviceLayout(ctx.caps, type).repack(raw, rows, cols),
    product,
    embedding(w, ids, y, scale = 1): BoundProduct {
      const k = lookupFor(w.type);
      const bound = w.shards.map((s) => ({ group: k.bind(s.store, ids, y), rowBegin: s.rowStart, rows: s.rows }));
      return {
        encode(pass, arena, tokens) {
          for (const b of bound) k.encode(pass, arena, b.group, { count: tokens, dim: w.cols, rowBegin: b.rowBegin, rows: b.rows, scale });
          return false;
        },
      };
    },
  };
}
