// AdamW with global gradient-norm clipping, one invocation per parameter. The clip factor comes from the
// squared gradient norm the reduction left in scalars[norm_index], so no readback sits between the backward
// pass and the update: g = grad · min(1, clip / (‖grad‖ + 1e-6)) (clip 0: none), then
// m = β1 m + (1 − β1) g, v = β2 v + (1 − β2) g², p −= lr · (m / bc1 / (sqrt(v / bc2) + ε) + wd · p).

struct Params {
  n: u32,
  norm_index: u32,
  lr: f32,
  beta1: f32,
  beta2: f32,
  epsilon: f32,
  weight_decay: f32,
  bias_correction1: f32,
  bias_correction2: f32,
  clip: f32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> param: array<f32>;
@group(0) @binding(1) var<storage, read> grad: array<f32>;
@group(0) @binding(2) var<storage, read_write> m1: array<f32>;
@group(0) @binding(3) var<storage, read_write> m2: array<f32>;
@group(0) @binding(4) var<storage, read> scalars: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= params.n) { return; }
  var factor = 1.0;
  if (params.clip > 0.0) {
    let norm = sqrt(scalars[params.norm_index]);
    factor = min(1.0, params.clip / (norm + 1e-6));
  }
  let g = grad[i] * factor;
  let m = params.beta1 * m1[i] + (1.0 - params.beta1) * g;
  let v = params.beta2 * m2[i] + (1.0 - params.beta2) * g * g;
  m1[i] = m;
  m2[i] = v;
  let p = param[i];
  let update = (m / params.bias_correction1) / (sqrt(v / params.bias_correction2) + params.epsilon);
  param[i] = p - params.lr * (update + params.weight_decay * p);
}
