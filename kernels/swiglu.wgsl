// Gated activation: out[t, i] = act(gate[t, i]) * up[t, i]. act is silu(x) = x / (1 + exp(-x)) (SwiGLU,
// llama), or with GELU = 1 the tanh approximation of GELU (GeGLU, gemma).
// Gate and up may be two buffers or two halves of one fused buffer (bind it twice; both are read-only).

struct Params {
  tokens: u32,
  n: u32,
  gate_offset: u32,
  up_offset: u32,
  in_stride: u32,
  out_stride: u32,
}

override WG: u32 = 64u;
override GELU: u32 = 0u;

@group(0) @binding(0) var<storage, read> gate: array<f32>;
@group(0) @binding(1) var<storage, read> up: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

fn act(g: f32) -> f32 {
  if (GELU != 0u) {
    // As ggml_gelu: beyond |x| = 10 the result is x or 0 (and tanh of a huge argument is never evaluated).
    if (g <= -10.0) { return 0.0; }
    if (g >= 10.0) { return g; }
    return 0.5 * g * (1.0 + tanh(0.7978845608028654 * g * (1.0 + 0.044715 * g * g)));
  }
  return g / (1.0 + exp(-g));
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let idx = gid.x + gid.y * nwg.x * WG;
  if (idx >= params.tokens * params.n) { return; }
  let t = idx / params.n;
  let i = idx % params.n;
  let g = gate[params.gate_offset + t * params.in_stride + i];
  let u = up[params.up_offset + t * params.in_stride + i];
  out[t * params.out_stride + i] = act(g) * u;
}
