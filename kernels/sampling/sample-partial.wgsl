// Split sampler, pass 1: each invocation reduces one CHUNK of one row's vocabulary with no workgroup
// memory or barriers: the running softmax (for the chosen token's log-probability) and the best score,
// which is the logit (greedy, temperature 0) or logit / T plus Gumbel noise (exact sampling from
// softmax(logits / T), reproducible for a seed). Chunks spread a row over many invocations, so a large
// vocabulary keeps a GPU busy and a CPU adapter's threads too.

const CHUNK: u32 = 256u;
override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read> mask: array<u32>;
@group(0) @binding(2) var<storage, read> rows_cfg: array<SampleRow>;
@group(0) @binding(3) var<storage, read_write> partials: array<Partial>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let c = gid.x;
  let r = gid.y;
  if (c >= params.chunks || r >= params.rows) { return; }
  let cfg = rows_cfg[r];
  let base = r * params.logits_stride;
  var m = NEG_INF;
  var s = 0.0;
  var best = NEG_INF;
  var best_i = 0xffffffffu;
  var best_z = NEG_INF;
  let end = min(params.vocab, (c + 1u) * CHUNK);
  for (var i = c * CHUNK; i < end; i++) {
    if (!allowed(r, params.mask_words, cfg.use_mask, i)) { continue; }
    let z = scaled(logits[base + i], cfg.temperature);
    if (z > m) { s = s * exp(m - z) + 1.0; m = z; } else { s += exp(z - m); }
    var score = z;
    if (cfg.temperature > 0.0) { score = z + gumbel(cfg.seed, cfg.counter, i); }
    // Strictly greater: within a chunk the lowest id wins a tie, as in llama.cpp's greedy sampler.
    if (score > best || best_i == 0xffffffffu) { best = score; best_i = i; best_z = z; }
  }
  partials[r * params.chunks + c] = Partial(m, s, best, best_i, best_z);
}
