// Sum (mode 0) or sum of squares (mode 1) of x[0..n): workgroup w adds up its `per_group` elements and
// writes out[out_index + w], or adds to it when accumulating. Two dispatches reduce any length: partial
// sums per workgroup, then one workgroup over the partials. Each invocation's loop stays short, within
// llvmpipe's loop budget (runtime/loop-budget.ts).

struct Params {
  n: u32,
  per_group: u32,
  out_index: u32,
  accumulate: u32,
  mode: u32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let begin = wg.x * params.per_group;
  let end = min(params.n, begin + params.per_group);
  var s = 0.0;
  for (var i = begin + li; i < end; i += WG) {
    let v = x[i];
    s += select(v, v * v, params.mode == 1u);
  }
  workgroup_sum(li, s);
  if (li == 0u) {
    let at = params.out_index + wg.x;
    out[at] = select(partial[0], out[at] + partial[0], params.accumulate != 0u);
  }
}
