// Rows of a packed weight matrix (any GPU layout of kernels/quant/, whose decoder is joined after this
// file) to f32: out[(dst_row + r) · cols + i] = W[src_row + r, i] for r < rows. Run once when a trainer is
// created, so every training product reads plain f32 and one matmul kernel serves all weight types.

struct Params {
  rows: u32,
  cols: u32,
  src_row: u32,
  dst_row: u32,
}

override WG: u32 = 64u;

// Binding 0 is the weights, declared by KernelContext for the device (runtime/weights.ts): w_ld(i).
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= params.rows * params.cols) { return; }
  let r = i / params.cols;
  let c = i % params.cols;
  out[(params.dst_row + r) * params.cols + c] = w_elem(w_row(params.src_row + r, params.cols), c);
}
