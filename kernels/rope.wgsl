// Rotary position embedding, in place, for T tokens × heads × head_dim rows.
// The pair order (normal or NeoX) and the rotation are rope-pair.wgsl's, shared with the trainer's RoPE.
// Only the first n_rot dimensions of each head rotate (partial rotary); the rest pass through.

struct Params {
  tokens: u32,
  heads: u32,
  head_dim: u32,
  n_rot: u32,
  neox: u32,
  freq_base: f32,
  freq_scale: f32,
  // 1 when `factors` holds per-pair frequency divisors (llama 3 long-context scaling), else 0.
  use_factors: u32,
  // Offset (elements) of token 0's first head in x, and the stride between tokens.
  x_offset: u32,
  token_stride: u32,
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
  let total = params.tokens * params.heads * half_rot;
  if (idx >= total) { return; }
  let i = idx % half_rot;
  let th = idx / half_rot;
  let h = th % params.heads;
  let t = th / params.heads;
  let base = params.x_offset + t * params.token_stride + h * params.head_dim;
  let theta = rope_theta(positions[t], i, params.n_rot, params.freq_base, params.freq_scale, params.use_factors);
  rope_rotate(base, i, half_rot, cos(theta), sin(theta));
}
