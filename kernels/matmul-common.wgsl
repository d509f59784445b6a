// Shared by the weight-product kernels: y[t, n] (+)= sum_k x[t, k] * W[n, k], W packed (see quant/).

struct Params {
  // Rows of x and y in this dispatch (tokens).
  t: u32,
  // Rows of W in the bound buffer (a shard's rows).
  n: u32,
  k: u32,
  // 1: y += W x (fuses a residual add), 0: y = W x.
  accumulate: u32,
  // Element offset of x[0, 0] and distance between rows of x, so a slice of a larger buffer can be read.
  x_offset: u32,
  x_stride: u32,
  // Element offset of y[0, 0] for this dispatch, the shard's first row already added; y row distance.
  y_offset: u32,
  y_stride: u32,
  // Bias variant only (matmul-store-bias.wgsl): index in `bias` of this dispatch's first W row.
  bias_offset: u32,
  // Gated products only (matmul-x-glu.wgsl): elements from a gate value to its up value in x.
  glu_up: u32,
  // Norm-fused products only (matvec-x-norm.wgsl): the RMSNorm epsilon.
  norm_eps: f32,
  // Products with a tail (matvec-tail.wgsl) only: 1 where this dispatch runs it; the tail's epsilon, its
  // values per row, where its input rows start in y and their distance, and (GLU) up's distance from gate.
  tail_on: u32,
  tail_eps: f32,
  tail_n: u32,
  tail_in_offset: u32,
  tail_in_stride: u32,
  tail_up: u32,
  // RoPE + KV-store tails (matvec-tail-rope-kv.wgsl): RopeKvStoreParams' heads, KV heads, head dim, paging
  // and RopeSettings.
  tail_heads: u32,
  tail_kv_heads: u32,
  tail_head_dim: u32,
  tail_page_size: u32,
  tail_max_pages: u32,
  tail_n_rot: u32,
  tail_neox: u32,
  tail_freq_base: f32,
  tail_freq_scale: f32,
  tail_use_factors: u32,
}

// Binding 0 is the weights, declared by KernelContext for the device (runtime/weights.ts): w_ld(i).
// x is read four floats at a time: on CPU rasterisers one vec4 load costs about what one f32 load does.
@group(0) @binding(1) var<storage, read> x: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

// x4(i) = x[i .. i+3] and x1(i) = x[i] come from matmul-x-aligned.wgsl or matmul-x-unaligned.wgsl,
// chosen by the wrapper from the x offset and stride, so the usual aligned case is one load with no
// branch; or from matmul-x-glu.wgsl, where the product's input is act(gate) * up computed as it is read.

// store(t, n, v) comes from matmul-store.wgsl or, for products with a bias, matmul-store-bias.wgsl.

