// Split sampler, pass 2: one invocation per row merges the row's chunk partials in order (so ties still
// go to the lowest token id) and writes [token, logprob bits]; token is 0xffffffff when the mask allowed
// nothing.

override WG: u32 = 16u;

@group(0) @binding(0) var<storage, read> partials: array<Partial>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let r = gid.x;
  if (r >= params.rows) { return; }
  var m = NEG_INF;
  var s = 0.0;
  var best = NEG_INF;
  var best_i = 0xffffffffu;
  var best_z = NEG_INF;
  for (var c = 0u; c < params.chunks; c++) {
    let p = partials[r * params.chunks + c];
    if (p.idx == 0xffffffffu) { continue; }
    let mm = max(m, p.m);
    s = s * exp(m - mm) + p.s * exp(p.m - mm);
    m = mm;
    if (p.best > best || best_i == 0xffffffffu) { best = p.best; best_i = p.idx; best_z = p.z; }
  }
  out[r * 2u] = best_i;
  out[r * 2u + 1u] = bitcast<u32>(best_z - (m + log(s)));
}
