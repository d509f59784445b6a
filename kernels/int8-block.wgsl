// What the int8 products (matvec-dp4a.wgsl, matmul-tiles-dp4a.wgsl) share beside quantize-q8-math.wgsl:
// only they may call dot4I8Packed (a WGSL language feature the other passes do not need).

// The sum of a packed block's 32 quants: the x side of a weight block's offset (sum (d q + m) x = d sum q x
// + m sum x).
fn q8_sum(q: Q8Quants) -> i32 {
  let ones = 0x01010101u;
  return dot4I8Packed(q.lo.x, ones) + dot4I8Packed(q.lo.y, ones) + dot4I8Packed(q.lo.z, ones) + dot4I8Packed(q.lo.w, ones)
    + dot4I8Packed(q.hi.x, ones) + dot4I8Packed(q.hi.y, ones) + dot4I8Packed(q.hi.z, ones) + dot4I8Packed(q.hi.w, ones);
}

// A weight block for the int8 products (w_int8 in int8-weights-*.wgsl): 32 integers q as bytes (elements
// 0..15 in q0, 16..31 in q1), each weight d q + m.
struct WInt8 {
  q0: vec4u,
  q1: vec4u,
  d: f32,
  m: f32,
}
