// x[t, :] = scale · table[ids[t], :] from an f32 table (the trainer's dequantized copy).

struct Params {
  tokens: u32,
  dim: u32,
  scale: f32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> table: array<f32>;
@group(0) @binding(1) var<storage, read> ids: array<u32>;
@group(0) @binding(2) var<storage, read_write> x: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= params.tokens * params.dim) { return; }
  let t = i / params.dim;
  let d = i % params.dim;
  x[i] = table[ids[t] * params.dim + d] * params.scale;
}
