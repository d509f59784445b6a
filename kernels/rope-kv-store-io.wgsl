// Params and the bindings shared by rope-kv-store.wgsl and rope-kv-store-vec4.wgsl, which declare qkv,
// k_cache and v_cache (bindings 0, 5, 6) as f32 or vec4 arrays.

struct Params {
  tokens: u32,
  heads: u32,
  kv_heads: u32,
  head_dim: u32,
  n_rot: u32,
  neox: u32,
  freq_base: f32,
  freq_scale: f32,
  use_factors: u32,
  // Token t's row starts at t * token_stride; Q at +0, K at +heads*head_dim, V at + that + kv_dim.
  token_stride: u32,
  page_size: u32,
  max_pages: u32,
}

override WG: u32 = 64u;

@group(0) @binding(1) var<storage, read> positions: array<u32>;
@group(0) @binding(2) var<storage, read> token_seq: array<u32>;
// Binding 3, the page table, and kv_row() come with attention-pages.wgsl, as attention finds a row.
@group(0) @binding(4) var<storage, read> factors: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;
