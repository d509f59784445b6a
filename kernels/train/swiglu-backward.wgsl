// Gradients of h = silu(gate) · up: dup = dh · silu(gate), dgate = dh · up · σ(gate) · (1 + gate · (1 − σ(gate))).

struct Params {
  count: u32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> gate: array<f32>;
@group(0) @binding(1) var<storage, read> up: array<f32>;
@group(0) @binding(2) var<storage, read> dh: array<f32>;
@group(0) @binding(3) var<storage, read_write> dgate: array<f32>;
@group(0) @binding(4) var<storage, read_write> dup: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= params.count) { return; }
  let g = gate[i];
  let sig = 1.0 / (1.0 + exp(-g));
  dup[i] = dh[i] * g * sig;
  dgate[i] = dh[i] * up[i] * sig * (1.0 + g * (1.0 - sig));
}
