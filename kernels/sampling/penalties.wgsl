// Repetition, presence and frequency penalties, applied in place to the logits of each row before
// sampling. Each row lists its distinct previous tokens; the order follows llama.cpp's penalties sampler:
// repetition first (divide positive logits, multiply negative ones), then presence and frequency.

struct Entry {
  token: u32,
  // Occurrences among generated tokens (presence/frequency count these, as the provider's API does).
  count: u32,
  // 1 when the token is within the repetition-penalty window (recent prompt + generated tokens).
  in_window: u32,
  _pad: u32,
}

struct RowPenalty {
  start: u32,
  count: u32,
  presence: f32,
  frequency: f32,
  repetition: f32,
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

struct Params {
  rows: u32,
  logits_stride: u32,
}

const WG: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> logits: array<f32>;
@group(0) @binding(1) var<storage, read> entries: array<Entry>;
@group(0) @binding(2) var<storage, read> rows_pen: array<RowPenalty>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let r = wg.x;
  if (r >= params.rows) { return; }
  let p = rows_pen[r];
  for (var j = lid; j < p.count; j += WG) {
    let e = entries[p.start + j];
    let at = r * params.logits_stride + e.token;
    var l = logits[at];
    if (e.in_window != 0u && p.repetition != 1.0) {
      if (l > 0.0) { l = l / p.repetition; } else { l = l * p.repetition; }
    }
    if (e.count > 0u) { l = l - p.presence - p.frequency * f32(e.count); }
    logits[at] = l;
  }
}
