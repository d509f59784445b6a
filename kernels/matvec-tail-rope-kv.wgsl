// The tail of a stacked Q|K|V product (matvec-tail.wgsl): RoPE on its Q heads in place and on its K heads
// into the paged KV cache, and its V heads into the cache, as rope-kv-store-vec4.wgsl does with the same
// rotations (rope-vec4.wgsl) and cache stores (rope-kv-store-cache-*.wgsl, bound from TAIL_BINDING_5), so
// the bits equal that pass's. One part per head: a head's rows come from tail_head_dim / TAIL_ROWS
// invocations (TAIL_ROWS weight rows each, a divisor of the head dimension), and the last of them moves
// the head for every token of the step. The product's rows are the Q, K and V heads in order, one
// dispatch; token t's row of y starts at element params.tail_in_offset + t * params.tail_in_stride.

override TAIL_ROWS: u32 = 8u;

@group(0) @binding(TAIL_BINDING_1) var<storage, read> positions: array<u32>;
@group(0) @binding(TAIL_BINDING_2) var<storage, read> token_seq: array<u32>;
@group(0) @binding(TAIL_BINDING_3) var<storage, read> page_table: array<u32>;
@group(0) @binding(TAIL_BINDING_4) var<storage, read> factors: array<f32>;

fn after_rows(nwg: vec3u, n0: u32) {
  if (params.tail_on == 0u || n0 >= params.n) { return; }
  let h = n0 / params.tail_head_dim;
  if (!tail_last(h, params.tail_head_dim / TAIL_ROWS)) { return; }
  for (var t = 0u; t < params.t; t++) { rope_head(t, h); }
}

fn head_in(e: u32) -> vec4f {
  return tail_in(e);
}

fn head_out(e: u32, v: vec4f) {
  tail_out(e, v);
}

// Head h (Q heads, then K, then V) of token t.
fn rope_head(t: u32, h: u32) {
  let hv = params.tail_head_dim / 4u;
  let pos = positions[t];
  let page = page_table[token_seq[t] * params.tail_max_pages + pos / params.tail_page_size];
  let cache_row = (page * params.tail_page_size + pos % params.tail_page_size) * params.tail_kv_heads * hv;
  let rot = RopeRot(params.tail_n_rot, params.tail_neox, params.tail_freq_base, params.tail_freq_scale, params.tail_use_factors);
  rope_kv_head(params.tail_in_offset + t * params.tail_in_stride, h, pos, cache_row, params.tail_heads, params.tail_kv_heads, hv, rot);
}
