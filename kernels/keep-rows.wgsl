// Before the last layer's attention: only the rows a step samples need the rest of the model (attention,
// O, the FFN and the head), as in llama.cpp, whose last layer keeps just its output rows. Every token's
// K and V are in the cache by now; this moves sampled row r's token (index keep[r]) to row r: its Q in
// the stacked QKV rows, its residual-stream row, its position and sequence slot, and sets keep[r] = r, so
// the rest of the step runs on rows 0..R-1 as if the step had R tokens, and the head's gather reads them
// in place. keep[] ascends, so keep[r] >= r: a row's source is never a row written before it, but may be
// one written after it, so one workgroup moves the rows in order, a barrier between rows.
// (Replaying a recorded step, as the profiler does, then finds the moved positions in rows 0..R-1.)

struct Params {
  rows: u32,
  q_dim: u32,
  qkv_stride: u32,
  dim: u32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> keep: array<u32>;
@group(0) @binding(1) var<storage, read_write> qkv: array<f32>;
@group(0) @binding(2) var<storage, read_write> x: array<f32>;
@group(0) @binding(3) var<storage, read_write> positions: array<u32>;
@group(0) @binding(4) var<storage, read_write> slots: array<u32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32) {
  for (var r = 0u; r < params.rows; r++) {
    let src = keep[r];
    if (src != r) {
      for (var i = lid; i < params.q_dim; i += WG) {
        qkv[r * params.qkv_stride + i] = qkv[src * params.qkv_stride + i];
      }
      for (var i = lid; i < params.dim; i += WG) {
        x[r * params.dim + i] = x[src * params.dim + i];
      }
    }
    // Every invocation has read keep[r] and its share of row src before any writes keep[r] or row r + 1.
    storageBarrier();
    workgroupBarrier();
    if (lid == 0u) {
      positions[r] = positions[src];
      slots[r] = slots[src];
      keep[r] = r;
    }
    storageBarrier();
    workgroupBarrier();
  }
}
