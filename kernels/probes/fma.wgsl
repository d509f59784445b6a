// Arithmetic probe: ACC independent vec4 accumulators, each stepped `iters` times by a = fma(a, m, c).
// Chains are independent of each other, so the adapter can keep every FMA unit busy; m and c come from
// the uniform, so nothing folds at compile time. Lines holding `$k` are written once per accumulator by
// the wrapper (kernels/probes/fma.ts).

struct Params {
  iters: u32,
  m: f32,
  c: f32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let m = vec4f(params.m);
  let c = vec4f(params.c);
  let seed = f32(gid.x & 255u);
  var a$k = vec4f(seed + f32($k), seed + 0.5, seed + 1.0, seed + 1.5);
  for (var i = 0u; i < params.iters; i++) {
    a$k = fma(a$k, m, c);
  }
  var s = vec4f(0.0);
  s += a$k;
  out[gid.x] = s.x + s.y + s.z + s.w;
}
