// RoPE on vec4s of a head, shared by rope-kv-store-vec4.wgsl and the QKV product's tail
// (matvec-tail-rope-kv.wgsl) so both give the same bits. Each pair's angle comes from rope_theta()
// (rope-angle.wgsl), its arithmetic is the scalar kernel's (rope-kv-store.wgsl). rope_kv_head() moves a
// whole head; its includer provides head_in(e) and head_out(e, v), the vec4 at element e of its Q|K|V
// rows, and store_k / store_v (rope-kv-store-cache-*.wgsl).

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

// Head h of one token's Q|K|V row (Q heads, then K, then V; the row at element `base`) at position
// `pos`, whose KV-cache row starts at vec4 `cache_row`: a Q head rotated in place, a K head rotated into
// the cache, a V head copied there. hv: vec4s a head.
fn rope_kv_head(base: u32, h: u32, pos: u32, cache_row: u32, heads: u32, kv_heads: u32, hv: u32, rot: RopeRot) {
  let hb = base + h * hv * 4u;
  if (h >= heads + kv_heads) {
    let vb = cache_row + (h - heads - kv_heads) * hv;
    for (var j = 0u; j < hv; j++) { store_v(vb + j, head_in(hb + 4u * j)); }
    return;
  }
  let rot_vec = rot.n_rot / 4u;
  let half_vec = rot.n_rot / 8u;
  let kb = cache_row + (h - min(h, heads)) * hv;
  for (var j = 0u; j < hv; j++) {
    // Up to two vec4s out: `a` at vec4 j, and in NeoX order `b` at jb, the upper halves of a's pairs.
    var a = vec4f();
    var b = vec4f();
    var jb = 0u;
    if (j >= rot_vec) {
      // Q's unrotated values stay where they are.
      if (h < heads) { continue; }
      a = head_in(hb + 4u * j);
    } else if (rot.neox == 0u) {
      a = rope_pairs(rot, pos, j, head_in(hb + 4u * j));
    } else {
      // The upper half's vec4s are written with their lower partners.
      if (j >= half_vec) { continue; }
      jb = j + half_vec;
      let ab = rope_halves(rot, pos, j, head_in(hb + 4u * j), head_in(hb + 4u * jb));
      a = ab[0];
      b = ab[1];
    }
    let two = rot.neox != 0u && j < rot_vec;
    if (h < heads) {
      head_out(hb + 4u * j, a);
      if (two) { head_out(hb + 4u * jb, b); }
    } else {
      store_k(kb + j, a);
      if (two) { store_k(kb + jb, b); }
    }
  }
}
