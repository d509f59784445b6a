// Shared by the per-row sampling kernels (sample.wgsl, topk.wgsl): one workgroup per row of logits,
// the same bindings and parameters, per-row sampling settings and the grammar mask test.

struct Params {
  rows: u32,
  vocab: u32,
  logits_stride: u32,
  mask_words: u32,
}

const WG: u32 = 128u;


struct SampleRow {
  // 0 = greedy (logits used as they are); otherwise logits are divided by it.
  temperature: f32,
  seed: u32,
  // Advances every sampled token, so each step draws fresh noise from the same seed.
  counter: u32,
  // 1 when this row's bits in `mask` restrict the vocabulary (grammar-constrained decoding).
  use_mask: u32,
}

fn allowed(mask_row: u32, mask_words: u32, use_mask: u32, i: u32) -> bool {
  if (use_mask == 0u) { return true; }
  return ((mask[mask_row * mask_words + (i >> 5u)] >> (i & 31u)) & 1u) != 0u;
}

fn scaled(l: f32, temperature: f32) -> f32 {
  if (temperature > 0.0) { return l / temperature; }
  return l;
}

// lowbias32 integer hash (Chris Wellons): well mixed, cheap, identical on every adapter.
fn hash32(x: u32) -> u32 {
  var h = x;
  h ^= h >> 16u;
  h *= 0x7feb352du;
  h ^= h >> 15u;
  h *= 0x846ca68bu;
  h ^= h >> 16u;
  return h;
}

// Standard Gumbel noise for token i: argmax(z + g) samples exactly from softmax(z).
fn gumbel(seed: u32, counter: u32, i: u32) -> f32 {
  let bits = hash32(seed ^ hash32(counter ^ hash32(i)));
  let u = (f32(bits >> 8u) + 0.5) / 16777216.0;
  return -log(-log(u));
}

const NEG_INF: f32 = -3.4e38;

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read> mask: array<u32>;
@group(0) @binding(2) var<storage, read> rows_cfg: array<SampleRow>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;
@group(1) @binding(0) var<uniform> params: Params;

