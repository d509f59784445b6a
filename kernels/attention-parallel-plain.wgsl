// attention-parallel.wgsl reading a query already rotated and every position's K and V from the cache
// (the RoPE/KV-store pass ran before it).

fn load_head(t: u32, h: u32, kh: u32, seq: u32, last: u32, lid: u32, split: u32) {
  let qb = (params.q_offset + t * params.q_stride) / 4u + h * HV;
  if (lid < HV) { q_shared[lid] = q[qb + lid]; }
  workgroupBarrier();
}

fn k_at(base: u32, d: u32, p: u32, last: u32) -> vec4f {
  return k_one(base, d);
}

fn v_at(base: u32, d: u32, p: u32, last: u32) -> vec4f {
  return v_one(base, d);
}
