// Gated activation: out[t, i] = act(gate[t, i]) * up[t, i], act from activation-*.wgsl: SiLU (SwiGLU,
// llama) or the tanh approximation of GELU (GeGLU, gemma).
// Gate and up may be two buffers or two halves of one fused buffer (bind it twice; both are read-only).

// Params and params: swiglu-params.wgsl.

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> gate: array<f32>;
@group(0) @binding(1) var<storage, read> up: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

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
