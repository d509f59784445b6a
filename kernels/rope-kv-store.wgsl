// RoPE and the KV-cache store in one pass over each token's fused Q|K|V row (the epilogue of the QKV
// product): Q heads are rotated in place (attention reads them there), K heads are rotated on their way
// into the paged cache, V is copied. One dispatch instead of two per layer. The angle comes from
// rope-angle.wgsl, as in rope.wgsl, so the results are the same bits.
//
// Work items per token: (heads + kv_heads) × head_dim/2 element pairs, then kv_dim/2 pairs of V.
// Pair i of a head with i < n_rot/2 rotates (2i, 2i+1) (normal order) or (i, i + n_rot/2) (NeoX); the
// pairs past n_rot/2 are the unrotated dims (2i, 2i+1) of partial rotary, passed through.

// Params, WG and the other bindings: rope-kv-store-io.wgsl.
@group(0) @binding(0) var<storage, read_write> qkv: array<f32>;
@group(0) @binding(5) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(6) var<storage, read_write> v_cache: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let half_dim = params.head_dim / 2u;
  let kv_dim = params.kv_heads * params.head_dim;
  let head_items = (params.heads + params.kv_heads) * half_dim;
  let per_token = head_items + kv_dim / 2u;
  let idx = gid.x + gid.y * nwg.x * WG;
  if (idx >= params.tokens * per_token) { return; }
  let t = idx / per_token;
  let item = idx % per_token;
  let row = t * params.token_stride;
  let pos = positions[t];
  let cache_row = kv_row(token_seq[t], pos) * kv_dim;
  let q_dim = params.heads * params.head_dim;

  if (item >= head_items) {
    let d = 2u * (item - head_items);
    v_cache[cache_row + d] = qkv[row + q_dim + kv_dim + d];
    v_cache[cache_row + d + 1u] = qkv[row + q_dim + kv_dim + d + 1u];
    return;
  }
  let h = item / half_dim;
  let i = item % half_dim;
  let half_rot = params.n_rot / 2u;
  var a = 2u * i;
  var b = a + 1u;
  var x0: f32;
  var x1: f32;
  let base = row + h * params.head_dim;
  if (i < half_rot) {
    let ab = rope_pair_index(i, half_rot, params.neox);
    a = ab.x;
    b = ab.y;
    let theta = rope_theta(pos, i, params.n_rot, params.freq_base, params.freq_scale, params.use_factors);
    let c = cos(theta);
    let s = sin(theta);
    let y0 = qkv[base + a];
    let y1 = qkv[base + b];
    x0 = y0 * c - y1 * s;
    x1 = y0 * s + y1 * c;
  } else {
    x0 = qkv[base + a];
    x1 = qkv[base + b];
  }
  if (h < params.heads) {
    qkv[base + a] = x0;
    qkv[base + b] = x1;
  } else {
    let kb = cache_row + (h - params.heads) * params.head_dim;
    k_cache[kb + a] = x0;
    k_cache[kb + b] = x1;
  }
}
