// Embedding lookup: y[i, :] = scale * W[ids[i], :] with W packed (see quant/). One workgroup per token.
// A big table is split in row shards, one dispatch each; a dispatch writes only the tokens whose id falls
// in its shard, so the shards together write every token once.

struct Params {
  count: u32,
  k: u32,
  ids_offset: u32,
  y_offset: u32,
  y_stride: u32,
  // The bound shard holds rows row_begin .. row_begin + rows of the table.
  row_begin: u32,
  rows: u32,
  // Some models (Gemma) scale embeddings by sqrt(dim); 1 otherwise.
  scale: f32,
}

override WG: u32 = 64u;

// Binding 0 is the weights, declared by KernelContext for the device (runtime/weights.ts): w_ld(i).
@group(0) @binding(1) var<storage, read> ids: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let tok = wg.x + wg.y * 65535u;
  if (tok >= params.count) { return; }
  let id = ids[params.ids_offset + tok];
  if (id < params.row_begin || id - params.row_begin >= params.rows) { return; }
  let r = w_row(id - params.row_begin, params.k);
  let yb = params.y_offset + tok * params.y_stride;
  let units = params.k / 16u;
  for (var u = lid; u < units; u += WG) {
    let m = w_unit(r, u);
    let kk = w_unit_k(u);
    for (var c = 0u; c < 4u; c++) {
      for (var e = 0u; e < 4u; e++) {
        y[yb + kk[c] + e] = m[c][e] * params.scale;
      }
    }
  }
  for (var i = units * 16u + lid; i < params.k; i += WG) {
    y[yb + i] = w_elem(r, i) * params.scale;
  }
}
