// The arithmetic of llama.cpp's int8 quantization of activations, shared by the passes that write
// quantized x to a buffer (quantize-x-block.wgsl) and the GPU product that quantizes x into workgroup
// memory (matvec-dp4a.wgsl), so both give the same bits.

// Four values already rounded to integers in -128..127, as the bytes of one word (first value lowest).
fn pack_bytes(v: vec4f) -> u32 {
  let b = bitcast<vec4u>(vec4i(v)) & vec4u(0xffu);
  return b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);
}

struct Q8Quants {
  lo: vec4u,
  hi: vec4u,
}

// 32 values times `id`, rounded half to even (llama.cpp's SIMD rounding) and capped at 127, packed.
fn q8_pack(v: array<vec4f, 8>, id: f32) -> Q8Quants {
  return Q8Quants(
    vec4u(pack_bytes(min(round(v[0] * id), vec4f(127.0))), pack_bytes(min(round(v[1] * id), vec4f(127.0))), pack_bytes(min(round(v[2] * id), vec4f(127.0))), pack_bytes(min(round(v[3] * id), vec4f(127.0)))),
    vec4u(pack_bytes(min(round(v[4] * id), vec4f(127.0))), pack_bytes(min(round(v[5] * id), vec4f(127.0))), pack_bytes(min(round(v[6] * id), vec4f(127.0))), pack_bytes(min(round(v[7] * id), vec4f(127.0)))),
  );
}

// quantize_row_q8_0's scale of 32 values: (the multiplier for q8_pack, the f32 step). The multiplier is
// the inverse of the f32 step, not 127 / max, so values on a rounding boundary go llama.cpp's way.
fn q8_0_step(v: array<vec4f, 8>) -> vec2f {
  var m = vec4f();
  for (var i = 0u; i < 8u; i++) { m = max(m, abs(v[i])); }
  let amax = max(max(m.x, m.y), max(m.z, m.w));
  let step = amax / 127.0;
  let id = select(0.0, 1.0 / step, step != 0.0);
  return vec2f(id, step);
}

// An f32 kept as f16 and read back as f32 (a Q8_0 block's step is stored as f16).
fn f16_kept(v: f32) -> f32 {
  return unpack2x16float(pack2x16float(vec2f(v, 0.0))).x;
}

// q8_0_step with the step as it is stored: (the multiplier, the f16 step read back as f32).
fn q8_0_scale(v: array<vec4f, 8>) -> vec2f {
  let s = q8_0_step(v);
  return vec2f(s.x, f16_kept(s.y));
}
