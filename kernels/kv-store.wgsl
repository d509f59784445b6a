// Write each token's K and V rows into the paged KV cache.
// Cache layout per layer: row r = page * page_size + slot holds kv_dim floats (all KV heads of one position).
// A token's page comes from its sequence's page table: page_table[seq * max_pages + pos / page_size].

struct Params {
  tokens: u32,
  kv_dim: u32,
  page_size: u32,
  max_pages: u32,
  // Where token t's K and V rows start in the source buffers: offset + t * stride.
  k_offset: u32,
  v_offset: u32,
  src_stride: u32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> k_src: array<f32>;
@group(0) @binding(1) var<storage, read> v_src: array<f32>;
@group(0) @binding(2) var<storage, read> positions: array<u32>;
@group(0) @binding(3) var<storage, read> token_seq: array<u32>;
@group(0) @binding(4) var<storage, read> page_table: array<u32>;
@group(0) @binding(5) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(6) var<storage, read_write> v_cache: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let idx = gid.x + gid.y * nwg.x * WG;
  if (idx >= params.tokens * params.kv_dim) { return; }
  let t = idx / params.kv_dim;
  let d = idx % params.kv_dim;
  let pos = positions[t];
  let page = page_table[token_seq[t] * params.max_pages + pos / params.page_size];
  let dst = (page * params.page_size + pos % params.page_size) * params.kv_dim + d;
  k_cache[dst] = k_src[params.k_offset + t * params.src_stride + d];
  v_cache[dst] = v_src[params.v_offset + t * params.src_stride + d];
}
