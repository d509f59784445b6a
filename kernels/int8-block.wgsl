// What the int8 products (matvec-dp4a.wgsl, matmul-tiles-dp4a.wgsl) share beside quantize-q8-math.wgsl:
// only they may call dot4I8Packed (a WGSL language feature the other passes do not need).

// The sums of a packed block's first and last 16 quants: the x side of a weight block's offset
// (sum (d q + m) x = d sum q x + m sum x).
fn q8_sums(q: Q8Quants) -> vec2f {
  return vec2f(f32(dot4(q.lo)), f32(dot4(q.hi)));
}

fn dot4(v: vec4u) -> i32 {
  let ones = 0x01010101u;
  return dot4I8Packed(v.x, ones) + dot4I8Packed(v.y, ones) + dot4I8Packed(v.z, ones) + dot4I8Packed(v.w, ones);
}

// A weight block for the int8 products (w_int8 in int8-weights-*.wgsl): 32 integers q as bytes (elements
// 0..15 in q0, 16..31 in q1), each weight d q + m, with d and m for each half (Q6_K's 16-element
// sub-blocks have scales of their own; the other types give both halves the same).
struct WInt8 {
  q0: vec4u,
  q1: vec4u,
  d: vec2f,
  m: vec2f,
}

// The 16 products of weight bytes w with x bytes a, summed exactly.
fn idot16(w: vec4u, a: vec4u) -> i32 {
  return dot4I8Packed(w.x, a.x) + dot4I8Packed(w.y, a.y) + dot4I8Packed(w.z, a.z) + dot4I8Packed(w.w, a.w);
}
