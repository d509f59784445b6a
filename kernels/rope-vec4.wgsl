// RoPE on vec4s of a head, shared by rope-kv-store-vec4.wgsl and the QKV product's tail
// (matvec-tail-rope-kv.wgsl) so both give the same bits. Each pair's angle comes from rope_theta()
// (rope-angle.wgsl), its arithmetic is the scalar kernel's (rope-kv-store.wgsl).

// The RopeSettings words of a kernel's Params.
struct RopeRot {
  n_rot: u32,
  neox: u32,
  freq_base: f32,
  freq_scale: f32,
  use_factors: u32,
}

// The rotation of pair indices `i` at `pos`: (cos, sin) of each, component by component.
fn rope_angles(r: RopeRot, pos: u32, i: vec4u) -> mat2x4f {
  var th: vec4f;
  for (var c = 0u; c < 4u; c++) {
    th[c] = rope_theta(pos, i[c], r.n_rot, r.freq_base, r.freq_scale, r.use_factors);
  }
  return mat2x4f(cos(th), sin(th));
}

// Normal order: vec4 j of a head (j < n_rot / 4) holds pairs 2j and 2j + 1.
fn rope_pairs(r: RopeRot, pos: u32, j: u32, y: vec4f) -> vec4f {
  let cs = rope_angles(r, pos, vec4u(2u * j, 2u * j, 2u * j + 1u, 2u * j + 1u));
  let c = cs[0];
  let s = cs[1];
  return vec4f(y.x * c.x - y.y * s.x, y.x * s.x + y.y * c.x, y.z * c.z - y.w * s.z, y.z * s.z + y.w * c.z);
}

// NeoX order: vec4 j (j < n_rot / 8) and vec4 j + n_rot / 8 hold the two halves of pairs 4j .. 4j + 3;
// both rotated, in that order.
fn rope_halves(r: RopeRot, pos: u32, j: u32, y0: vec4f, y1: vec4f) -> mat2x4f {
  let cs = rope_angles(r, pos, 4u * j + vec4u(0u, 1u, 2u, 3u));
  return mat2x4f(y0 * cs[0] - y1 * cs[1], y0 * cs[1] + y1 * cs[0]);
}
