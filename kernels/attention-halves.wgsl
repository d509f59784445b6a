// Halves of the f16 KV cache format (kv-format.ts) as f32, for the attention kernels that read it from
// buffers (attention-kv-f16.wgsl) or from a long step's mirror (attention-mirror.wgsl).

// Four halves (the low 16 bits of each component) as f32, exactly, with integer and float arithmetic:
// llvmpipe's unpack2x16float made attention over this cache 3x slower than over the f32 one (283 against
// 92 ms for 64 tokens at 384 positions of SmolLM2-135M), where loading the halves alone took 51. Normal
// halves move their exponent by 127 - 15; subnormals (exponent 0) are their mantissa times 2^-24, a
// normal f32 (llvmpipe flushes f32 denormals); infinities and NaNs keep an all-ones exponent.
fn halves_to_f32(h: vec4u) -> vec4f {
  let mag = h & vec4u(0x7fffu);
  let normal = bitcast<vec4f>((mag << vec4u(13u)) + vec4u(0x38000000u));
  let small = vec4f(mag) * 5.9604645e-8;
  let special = bitcast<vec4f>((mag << vec4u(13u)) | vec4u(0x7f800000u));
  let v = select(select(normal, special, mag >= vec4u(0x7c00u)), small, mag < vec4u(0x400u));
  return bitcast<vec4f>(bitcast<vec4u>(v) | ((h & vec4u(0x8000u)) << vec4u(16u)));
}

// Values 0..3 and 4..7 of a packed vec4u (two halves a word, the lower first).
fn unpack_pair(w: vec4u) -> mat2x4f {
  let lo = w & vec4u(0xffffu);
  let hi = w >> vec4u(16u);
  return mat2x4f(halves_to_f32(vec4u(lo.x, hi.x, lo.y, hi.y)), halves_to_f32(vec4u(lo.z, hi.z, lo.w, hi.w)));
}
