// RoPE for training, in place on rows of T tokens × heads × head_dim: direction +1 rotates by the angle
// (the forward pass, the same angles as the engine's rope.wgsl through rope-angle.wgsl), −1 rotates back,
// which is the gradient of the rotation (its transpose). The pairs are rotated by the engine's
// rope-pair.wgsl; dimensions past n_rot pass through.

struct Params {
  tokens: u32,
  heads: u32,
  head_dim: u32,
  n_rot: u32,
  neox: u32,
  freq_base: f32,
  freq_scale: f32,
  use_factors: u32,
  direction: f32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> positions: array<u32>;
@group(0) @binding(2) var<storage, read> factors: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let half_rot = params.n_rot / 2u;
  let idx = gid.x + gid.y * nwg.x * WG;
  if (idx >= params.tokens * params.heads * half_rot) { return; }
  let i = idx % half_rot;
  let th = idx / half_rot;
  let h = th % params.heads;
  let t = th / params.heads;
  let base = (t * params.heads + h) * params.head_dim;
  let theta = rope_theta(positions[t], i, params.n_rot, params.freq_base, params.freq_scale, params.use_factors);
  rope_rotate(base, i, half_rot, cos(theta), sin(theta) * params.direction);
}
