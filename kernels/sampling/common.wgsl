// Shared by the sampling kernels: their parameters, per-row sampling settings, the per-chunk partial
// results of the split sampler, and noise and temperature helpers. (The mask test is in mask.wgsl: it
// needs the kernel's `mask` binding.)

struct Params {
  rows: u32,
  vocab: u32,
  logits_stride: u32,
  mask_words: u32,
  // Vocabulary chunks per row (split sampler).
  chunks: u32,
}

// One chunk's reduction of a row: running softmax (max m, sum s of exp(z - m)) and the best score.
struct Partial {
  m: f32,
  s: f32,
  best: f32,
  // 0xffffffff when the chunk had no allowed token.
  idx: u32,
  // z (scaled logit) of the best token, for its log-probability.
  z: f32,
}


struct SampleRow {
  // 0 = greedy (logits used as they are); otherwise logits are divided by it.
  temperature: f32,
  seed: u32,
  // Advances every sampled token, so each step draws fresh noise from the same seed.
  counter: u32,
  // 1 when this row's bits in `mask` restrict the vocabulary (grammar-constrained decoding).
  use_mask: u32,
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
