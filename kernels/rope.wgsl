// Rotary position embedding, in place, for T tokens × heads × head_dim rows.
// Normal (GPT-J/llama) order rotates pairs (2i, 2i+1); NeoX order rotates (i, i + n_rot/2).
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
  let c = cos(theta);
  let s = sin(theta);
  var a: u32;
  var b: u32;
  if (params.neox != 0u) {
    a = base + i;
    b = base + i + half_rot;
  } else {
    a = base + 2u * i;
    b = a + 1u;
  }
  let x0 = x[a];
  let x1 = x[b];
  x[a] = x0 * c - x1 * s;
  x[b] = x0 * s + x1 * c;
}
