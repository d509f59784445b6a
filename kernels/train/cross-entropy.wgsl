// Softmax cross-entropy per token against its target, weighted by the loss mask: loss[t] = mask[t] ·
// (logsumexp(logits[t]) − logits[t, target[t]]). With write_grad set, the logits row is replaced in place by
// the gradient of the batch's mean loss: (softmax − onehot(target)) · mask[t] · inv_count.
// One workgroup per token. Rows of `logits` are tokens row_offset.. of targets, mask and loss, so a long
// batch goes through the output head a chunk of rows at a time.

struct Params {
  tokens: u32,
  vocab: u32,
  inv_count: f32,
  write_grad: u32,
  row_offset: u32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> logits: array<f32>;
@group(0) @binding(1) var<storage, read> targets: array<u32>;
@group(0) @binding(2) var<storage, read> mask: array<f32>;
@group(0) @binding(3) var<storage, read_write> loss: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let t = wg.x + wg.y * nwg.x;
  if (t >= params.tokens) { return; }
  let base = t * params.vocab;
  let row = params.row_offset + t;
  // The max tree reuses workgroup-sum.wgsl's scratch.
  var m = -3.0e38;
  for (var i = li; i < params.vocab; i += WG) { m = max(m, logits[base + i]); }
  partial[li] = m;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (li < s) { partial[li] = max(partial[li], partial[li + s]); }
    workgroupBarrier();
  }
  let mx = partial[0];
  workgroupBarrier();
  var z = 0.0;
  for (var i = li; i < params.vocab; i += WG) { z += exp(logits[base + i] - mx); }
  workgroup_sum(li, z);
  let lse = mx + log(partial[0]);
  let w = mask[row];
  let tgt = targets[row];
  if (li == 0u) { loss[row] = select(0.0, w * (lse - logits[base + tgt]), w != 0.0); }
  workgroupBarrier();
  if (params.write_grad != 0u) {
    let g = w * params.inv_count;
    for (var i = li; i < params.vocab; i += WG) {
      let p = exp(logits[base + i] - lse);
      logits[base + i] = (p - select(0.0, 1.0, i == tgt)) * g;
    }
  }
}
