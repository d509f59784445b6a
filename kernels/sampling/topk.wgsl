// Exact top-K candidates of each row, so top-k / top-p sampling reads back K pairs instead of the whole
// vocabulary. Finds a threshold by bisection (count of values >= t, in parallel), then compacts the values
// at or above it. Output per row: [count, max bits, logsumexp bits, 0] then K pairs [token, value bits];
// values are logits / T (T = 1 when temperature is 0), over tokens the mask allows; pairs are unordered.

const WG: u32 = 128u;
override K: u32 = 64u;
const BISECT_STEPS: u32 = 28u;

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read> mask: array<u32>;
@group(0) @binding(2) var<storage, read> rows_cfg: array<SampleRow>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;
@group(1) @binding(0) var<uniform> params: Params;

var<workgroup> red_m: array<f32, WG>;
var<workgroup> red_s: array<f32, WG>;
var<workgroup> red_min: array<f32, WG>;
var<workgroup> counts: array<atomic<u32>, 2>;
var<workgroup> slots: atomic<u32>;

fn value(r: u32, i: u32, cfg: SampleRow) -> f32 {
  if (!allowed(r, params.mask_words, cfg.use_mask, i)) { return NEG_INF; }
  return scaled(logits[r * params.logits_stride + i], cfg.temperature);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let r = wg.x;
  if (r >= params.rows) { return; }
  let cfg = rows_cfg[r];
  var m = NEG_INF;
  var s = 0.0;
  var mn = 3.4e38;
  for (var i = lid; i < params.vocab; i += WG) {
    let z = value(r, i, cfg);
    if (z <= NEG_INF) { continue; }
    if (z > m) { s = s * exp(m - z) + 1.0; m = z; } else { s += exp(z - m); }
    mn = min(mn, z);
  }
  red_m[lid] = m;
  red_s[lid] = s;
  red_min[lid] = mn;
  if (lid == 0u) {
    atomicStore(&counts[0], 0u);
    atomicStore(&counts[1], 0u);
    atomicStore(&slots, 0u);
  }
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
    if (lid < stride) {
      let o = lid + stride;
      let m1 = red_m[lid];
      let m2 = red_m[o];
      let mm = max(m1, m2);
      if (mm > NEG_INF) { red_s[lid] = red_s[lid] * exp(m1 - mm) + red_s[o] * exp(m2 - mm); }
      red_m[lid] = mm;
      red_min[lid] = min(red_min[lid], red_min[o]);
    }
    workgroupBarrier();
  }
  let top = red_m[0];
  let lse = top + log(red_s[0]);
  // Invariant: count(>= hi) <= K (unless more than K values tie at the max), and lo starts strictly below
  // every value so a row with at most K allowed tokens keeps them all.
  var lo = red_min[0] - 1.0;
  var hi = top;
  for (var step = 0u; step < BISECT_STEPS; step++) {
    let mid = lo + (hi - lo) * 0.5;
    var c = 0u;
    for (var i = lid; i < params.vocab; i += WG) {
      if (value(r, i, cfg) >= mid) { c++; }
    }
    let slot = step & 1u;
    atomicAdd(&counts[slot], c);
    workgroupBarrier();
    let total = atomicLoad(&counts[slot]);
    if (lid == 0u) { atomicStore(&counts[slot ^ 1u], 0u); }
    if (total > K) { lo = mid; } else { hi = mid; }
    workgroupBarrier();
  }
  let row_out = r * (4u + 2u * K);
  if (top > NEG_INF) {
    for (var i = lid; i < params.vocab; i += WG) {
      let z = value(r, i, cfg);
      if (z >= hi) {
        let k = atomicAdd(&slots, 1u);
        if (k < K) {
          out[row_out + 4u + 2u * k] = i;
          out[row_out + 5u + 2u * k] = bitcast<u32>(z);
        }
      }
    }
  }
  workgroupBarrier();
  if (lid == 0u) {
    out[row_out] = min(atomicLoad(&slots), K);
    out[row_out + 1u] = bitcast<u32>(top);
    out[row_out + 2u] = bitcast<u32>(lse);
    out[row_out + 3u] = 0u;
  }
}
