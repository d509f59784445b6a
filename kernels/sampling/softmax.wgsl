// Row-wise softmax of logits / T into probabilities (T = 1 when temperature is 0): used where a caller
// wants the whole distribution (tests, full logprobs); the decode loop itself never reads it back.

struct Params {
  rows: u32,
  n: u32,
  stride: u32,
  temperature: f32,
}

const WG: u32 = 128u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

var<workgroup> red_m: array<f32, WG>;
var<workgroup> red_s: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let r = wg.x;
  if (r >= params.rows) { return; }
  var t = params.temperature;
  if (t <= 0.0) { t = 1.0; }
  let base = r * params.stride;
  var m = -3.4e38;
  var s = 0.0;
  for (var i = lid; i < params.n; i += WG) {
    let z = x[base + i] / t;
    if (z > m) { s = s * exp(m - z) + 1.0; m = z; } else { s += exp(z - m); }
  }
  red_m[lid] = m;
  red_s[lid] = s;
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
    if (lid < stride) {
      let mm = max(red_m[lid], red_m[lid + stride]);
      red_s[lid] = red_s[lid] * exp(red_m[lid] - mm) + red_s[lid + stride] * exp(red_m[lid + stride] - mm);
      red_m[lid] = mm;
    }
    workgroupBarrier();
  }
  let mm = red_m[0];
  let inv = 1.0 / red_s[0];
  for (var i = lid; i < params.n; i += WG) {
    y[base + i] = exp(x[base + i] / t - mm) * inv;
  }
}
