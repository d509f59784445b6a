// Params and bindings shared by the attention kernels (see AttentionKernel.bind).

struct Params {
  tokens: u32,
  heads: u32,
  kv_heads: u32,
  head_dim: u32,
  page_size: u32,
  max_pages: u32,
  scale: f32,
  // Sliding window in positions (0 = attend to the whole prefix).
  window: u32,
  q_offset: u32,
  q_stride: u32,
  out_offset: u32,
  out_stride: u32,
  // Gemma 2 style logit soft-capping (0 = off): s = cap * tanh(s / cap).
  softcap: f32,
  // RoPE settings (rope.ts writeRopeSettings), read only by the kernel that rotates as it attends
  // (attention-parallel-rope.wgsl).
  n_rot: u32,
  neox: u32,
  freq_base: f32,
  freq_scale: f32,
  use_factors: u32,
  // Workgroups each (token, head) pair's positions are split over (attention-parallel.wgsl; 1 = none).
  splits: u32,
}

// Head dimensions up to MAX_HEAD_DIM (ATTENTION_MAX_HEAD_DIM in attention.ts).
const MAX_HEAD_DIM: u32 = 256u;

// q, k_cache, v_cache (bindings 0-2) and out (binding 6): f32 arrays in attention-io-f32.wgsl, vec4 arrays
// in attention-io-vec4.wgsl (head dimensions, offsets and strides all multiples of 4). Binding 3 says
// where a position's KV row is (kv_row): the page table (attention-pages.wgsl), or a long step's mirror
// of the rows (attention-mirror.wgsl).
@group(0) @binding(4) var<storage, read> positions: array<u32>;
@group(0) @binding(5) var<storage, read> token_seq: array<u32>;
@group(1) @binding(0) var<uniform> params: Params;

// The KV head query head h reads: grouped-query attention gives each KV head heads / kv_heads
// consecutive query heads.
fn kv_head(h: u32) -> u32 {
  return h / (params.heads / params.kv_heads);
}

// The first position a token at `last` attends to: 0, or the start of its sliding window.
fn first_position(last: u32) -> u32 {
  if (params.window > 0u && last + 1u > params.window) { return last + 1u - params.window; }
  return 0u;
}
