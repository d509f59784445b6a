// attention-parallel.wgsl with the RoPE/KV-store pass folded in, for steps where every token is its
// sequence's only new position (decode steps): each workgroup rotates its query head and its token's K
// head from the un-rotated Q|K|V row (rope-angle.wgsl's angle, rope-kv-store.wgsl's rotation), takes V
// beside them, and reads its token's own position from those rather than from the cache; the workgroup
// of the first query head of each KV head stores that K and V into the cache for later steps. No
// workgroup reads a cache row another writes in the same dispatch. One dispatch a layer fewer, which on
// a GPU is host time: encoding a dispatch costs the host about as much as a small one runs.
// k_cache and v_cache are bound read-write here (AttentionKernel's rope kernel), factors at binding 7.

@group(0) @binding(7) var<storage, read> factors: array<f32>;

var<workgroup> k_new: array<vec4f, MAX_HEAD_VEC>;
var<workgroup> v_new: array<vec4f, MAX_HEAD_VEC>;

fn load_head(t: u32, h: u32, kh: u32, seq: u32, last: u32, lid: u32, split: u32) {
  let row = (params.q_offset + t * params.q_stride) / 4u;
  if (lid < HV) {
    q_shared[lid] = q[row + h * HV + lid];
    k_new[lid] = q[row + (params.heads + kh) * HV + lid];
    v_new[lid] = q[row + (params.heads + params.kv_heads + kh) * HV + lid];
  }
  workgroupBarrier();
  // Pairs i < n_rot / 2 rotate (rope-angle.wgsl); the rest pass through.
  let half_rot = params.n_rot / 2u;
  if (lid < half_rot) {
    let ab = rope_pair_index(lid, half_rot, params.neox);
    let a = ab.x;
    let b = ab.y;
    let theta = rope_theta(last, lid, params.n_rot, params.freq_base, params.freq_scale, params.use_factors);
    let c = cos(theta);
    let s = sin(theta);
    let q0 = q_shared[a / 4u][a % 4u];
    let q1 = q_shared[b / 4u][b % 4u];
    let k0 = k_new[a / 4u][a % 4u];
    let k1 = k_new[b / 4u][b % 4u];
    q_shared[a / 4u][a % 4u] = q0 * c - q1 * s;
    q_shared[b / 4u][b % 4u] = q0 * s + q1 * c;
    k_new[a / 4u][a % 4u] = k0 * c - k1 * s;
    k_new[b / 4u][b % 4u] = k0 * s + k1 * c;
  }
  workgroupBarrier();
  // One workgroup of the KV head's stores (the first split of its first query head); the others read
  // the token's own K and V from k_new and v_new, never from the row being written.
  if (h % (params.heads / params.kv_heads) == 0u && split == 0u && lid < HV) {
    let base = kv_row(seq, last) * params.kv_heads * HV + kh * HV;
    k_cache[base + lid] = k_new[lid];
    v_cache[base + lid] = v_new[lid];
  }
}

fn k_at(base: u32, d: u32, p: u32, last: u32) -> vec4f {
  if (p == last) { return k_new[d]; }
  return k_one(base, d);
}

fn v_at(base: u32, d: u32, p: u32, last: u32) -> vec4f {
  if (p == last) { return v_new[d]; }
  return v_one(base, d);
}
