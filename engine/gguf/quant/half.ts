/**
 * IEEE half and bfloat16 conversions for the CPU reference codecs. Rounding is to nearest-even, as
 * ggml's GGML_FP32_TO_FP16 does on hardware with F16C, so quantizers can produce byte-identical blocks.
 */
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

export function floatToHalf(v: number): number {
  f32[0] = v;
  const x = u32[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half (or zero): shift the implicit bit in and round to nearest-even.
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    let r = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    if (rest > half || (rest === half && r & 1)) r++;
    return sign | r;
  }
  let r = mant >>> 13;
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && r & 1)) {
    r++;
    if (r === 0x400) {
      r = 0;
      e++;
      if (e >= 31) return sign | 0x7c00;
    }
  }
  return sign | (e << 10) | r;
}

/** The value a float becomes once stored as f16. */
export function roundHalf(v: number): number {
  return halfToFloat(floatToHalf(v));
}

export function bf16ToFloat(b: number): number {
  u32[0] = (b & 0xffff) << 16;
  return f32[0];
}

/** Round-to-nearest-even, NaN kept quiet: the rounding ggml_compute_fp32_to_bf16 uses. */
export function floatToBf16(v: number): number {
  f32[0] = v;
  const x = u32[0];
  if ((x & 0x7fffffff) > 0x7f800000) return ((x >>> 16) | 64) & 0xffff;
  return ((x + (0x7fff + ((x >>> 16) & 1))) >>> 16) & 0xffff;
}
