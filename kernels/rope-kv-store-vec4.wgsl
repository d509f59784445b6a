// rope-kv-store.wgsl reading and writing vec4s, for CPU rasterisers, where every storage load and store
// in a branch is a loop over the SIMD lanes: a vec4 of a head costs about what one f32 does, so each
// invocation takes four elements (two pairs in normal order; in NeoX order four pairs, from a vec4 of
// each half) instead of two. Each pair's angle and arithmetic are the scalar kernel's, so both give the
// same bits (test/kernels/rope-kv-store.test.ts); the rotations are rope-vec4.wgsl's. Needs head_dim and token_stride multiples of 4 and
// n_rot a multiple of 4 (normal order) or 8 (NeoX) (RopeKvStoreKernel checks).
//
// Work items per token: (heads + kv_heads) × head_dim/4 vec4s, then kv_dim/4 vec4s of V.

// Params, WG and the other bindings: rope-kv-store-io.wgsl.
@group(0) @binding(0) var<storage, read_write> qkv: array<vec4f>;
// k_cache and v_cache (bindings 5, 6) with store_k() and store_v() come from rope-kv-store-cache-f32.wgsl
// or rope-kv-store-cache-f16.wgsl, by the cache's format.

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let hv = params.head_dim / 4u;
  let kv_vec = params.kv_heads * hv;
  let head_items = (params.heads + params.kv_heads) * hv;
  let per_token = head_items + kv_vec;
  let idx = gid.x + gid.y * nwg.x * WG;
  if (idx >= params.tokens * per_token) { return; }
  let t = idx / per_token;
  let item = idx % per_token;
  let row = t * params.token_stride / 4u;
  let pos = positions[t];
  let page = page_table[token_seq[t] * params.max_pages + pos / params.page_size];
  let cache_row = (page * params.page_size + pos % params.page_size) * kv_vec;
  let q_vec = params.heads * hv;

  if (item >= head_items) {
    let d = item - head_items;
    store_v(cache_row + d, qkv[row + q_vec + kv_vec + d]);
    return;
  }
  let h = item / hv;
  let j = item % hv;
  let base = row + h * hv;
  let rot_vec = params.n_rot / 4u;
  let rot = RopeRot(params.n_rot, params.neox, params.freq_base, params.freq_scale, params.use_factors);
  // Up to two vec4s out: `a` at vec4 j, and in NeoX order `b`, the upper halves of a's pairs.
  var a: vec4f;
  var b = vec4f();
  var jb = 0u;
  if (j >= rot_vec) {
    a = qkv[base + j];
  } else if (params.neox == 0u) {
    a = rope_pairs(rot, pos, j, qkv[base + j]);
  } else {
    let half_vec = params.n_rot / 8u;
    // The upper half's vec4s are written with their lower partners.
    if (j >= half_vec) { return; }
    jb = j + half_vec;
    let ab = rope_halves(rot, pos, j, qkv[base + j], qkv[base + jb]);
    a = ab[0];
    b = ab[1];
  }
  let two = params.neox != 0u && j < rot_vec;
  if (h < params.heads) {
    qkv[base + j] = a;
    if (two) { qkv[base + jb] = b; }
  } else {
    let kb = cache_row + (h - params.heads) * hv;
    store_k(kb + j, a);
    if (two) { store_k(kb + jb, b); }
  }
}
