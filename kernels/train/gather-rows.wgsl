// out[r, :] = x[index[r], :], or zeros where index[r] is NONE: picks the counted positions' rows before
// the output head (forward) and puts their gradients back among zero rows (backward).

struct Params {
  rows: u32,
  dim: u32,
}

const NONE: u32 = 0xffffffffu;

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> index: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= params.rows * params.dim) { return; }
  let src = index[i / params.dim];
  out[i] = select(x[src * params.dim + i % params.dim], 0.0, src == NONE);
}
