// Gather rows: y[i, :] = x[idx[i], :]. Picks the hidden states whose logits are needed (the last token of
// each sequence in a batch) so the output head runs on those rows only.

struct Params {
  rows: u32,
  dim: u32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> idx: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= params.rows * params.dim) { return; }
  let r = i / params.dim;
  let d = i % params.dim;
  y[i] = x[idx[r] * params.dim + d];
}
