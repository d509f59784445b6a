// rope-kv-store.wgsl reading and writing vec4s, for CPU rasterisers, where every storage load and store
// in a branch is a loop over the SIMD lanes: a vec4 of a head costs about what one f32 does. Each
// invocation moves one head of one token (rope_kv_head, rope-vec4.wgsl, shared with the QKV product's
// tail), so the token's position and cache row are looked up once a head rather than once a vec4 (a
// SmolLM2-135M 64-token step's 30 passes 11.5-13.0 -> 9.2 ms on llvmpipe; the rotations themselves cost
// next to nothing there). Each pair's angle and arithmetic are the scalar kernel's, so both give the
// same bits (test/kernels/rope-kv-store.test.ts). Needs head_dim and token_stride multiples of 4 and
// n_rot a multiple of 4 (normal order) or 8 (NeoX) (RopeKvStoreKernel checks).
//
// Work items per token: heads + kv_heads (K) + kv_heads (V).

// Params, WG and the other bindings: rope-kv-store-io.wgsl.
@group(0) @binding(0) var<storage, read_write> qkv: array<vec4f>;
// k_cache and v_cache (bindings 5, 6) with store_k() and store_v() come from rope-kv-store-cache-f32.wgsl
// or rope-kv-store-cache-f16.wgsl, by the cache's format.

fn head_in(e: u32) -> vec4f {
  return qkv[e / 4u];
}

fn head_out(e: u32, v: vec4f) {
  qkv[e / 4u] = v;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let hv = params.head_dim / 4u;
  let per_token = params.heads + 2u * params.kv_heads;
  let idx = gid.x + gid.y * nwg.x * WG;
  if (idx >= params.tokens * per_token) { return; }
  let t = idx / per_token;
  let pos = positions[t];
  let cache_row = kv_row(token_seq[t], pos) * params.kv_heads * hv;
  let rot = RopeRot(params.n_rot, params.neox, params.freq_base, params.freq_scale, params.use_factors);
  rope_kv_head(t * params.token_stride, idx % per_token, pos, cache_row, params.heads, params.kv_heads, hv, rot);
}
