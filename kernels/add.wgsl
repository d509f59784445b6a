// Residual add in place: x[i] += y[i] for n elements (offsets let it address a slice).

struct Params {
  n: u32,
  x_offset: u32,
  y_offset: u32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= params.n) { return; }
  x[params.x_offset + i] += y[params.y_offset + i];
}
