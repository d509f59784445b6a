/**
 * How the paged KV cache holds K and V. 'f32': one float per value, what every attention and RoPE/KV-store
 * kernel reads and writes. 'f16': values rounded to half precision and packed in pairs (WGSL's
 * pack2x16float, no shader-f16 needed), read and written only by the CPU rasterisers' vec4 kernels
 * (attention-serial-grouped/-split, rope-kv-store-vec4): half the cache memory, and half the loads of
 * attention's inner loop, where on llvmpipe every storage load is a loop over the SIMD lanes (a 64-token
 * step of SmolLM2-135M at 320 cached positions: attention 96-106 -> 68-94 ms). llama.cpp keeps its KV
 * cache in f16 by default too, so attention reads the values it reads.
 */
import type { GpuCaps } from './runtime/caps.ts';

export type KvFormat = 'f32' | 'f16';

/** Bytes of one cached value in `format`. */
export function kvValueBytes(format: KvFormat): number {
  return format === 'f16' ? 2 : 4;
}

/**
 * 'auto': 'f16' on CPU rasterisers for shapes every step's vec4 kernels take (heads of whole vec4 pairs,
 * 8 values, so a row's heads start on packed vec4s; rotated dimensions the vec4 RoPE kernel takes in
 * either order), 'f32' elsewhere. 'f16' asked for where it cannot be had is an error naming why.
 */
export function kvFormatFor(caps: GpuCaps, shape: { headDim: number; nRot: number }, wanted: 'auto' | KvFormat = 'auto'): KvFormat {
  if (wanted === 'f32') return 'f32';
  const why = !caps.software
    ? 'an f16 KV cache is read by the CPU rasterisers\' kernels only (this adapter is a GPU)'
    : shape.headDim % 8 !== 0 || shape.nRot % 8 !== 0
      ? `an f16 KV cache needs heads and rotated dimensions that are multiples of 8 (this model: ${shape.headDim} and ${shape.nRot})`
      : undefined;
  if (why && wanted === 'f16') throw new Error(why);
  return why ? 'f32' : 'f16';
}
