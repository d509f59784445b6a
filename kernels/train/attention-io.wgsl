// What attention-forward.wgsl, attention-backward-q.wgsl and attention-backward-kv.wgsl share (joined to
// each, after the wrapper's HD / V / HDV / vdot prelude): the step's parameters, the inputs all three
// read, and the index math, so the forward pass and its gradients cannot disagree on the layout.

struct Params {
  tokens: u32,
  heads: u32,
  kv_heads: u32,
  scale: f32,
  // Whole chunks of HEAD_CHUNK vectors in a head, where the wrapper writes the head's lines as a loop over
  // them (TrainAttentionKernels: heads of more than HEAD_CHUNK vectors); 0 where it writes them all out.
  head_chunks: u32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> q: array<V>;
@group(0) @binding(1) var<storage, read> k: array<V>;
@group(0) @binding(2) var<storage, read> v: array<V>;
// span[2t], span[2t+1]: the first token of t's sequence and one past its last.
@group(0) @binding(3) var<storage, read> span: array<u32>;
@group(1) @binding(0) var<uniform> params: Params;

// The invocation's row: (token, head), or (token, KV head) for dK and dV; grids wider than 65535
// workgroups wrap into y.
fn row_index(gid: vec3u, nwg: vec3u) -> u32 {
  return gid.x + gid.y * nwg.x * WG;
}

fn sequence_start(t: u32) -> u32 {
  return span[2u * t];
}

fn sequence_end(t: u32) -> u32 {
  return span[2u * t + 1u];
}

// Grouped-query attention: each run of heads / kv_heads consecutive query heads reads one KV head.
fn kv_head(h: u32) -> u32 {
  return h / (params.heads / params.kv_heads);
}
