// lora-a.wgsl for CPU rasterisers, where a workgroup barrier costs more than the work it would share:
// one invocation per (token, member, r) computes its whole dot product of a row of A with x. Same
// bindings, params and output as lora-a.wgsl (lora-a-io.wgsl).

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let idx = gid.x + gid.y * nwg.x * WG;
  let per_token = params.members * params.max_rank;
  let tok = idx / per_token;
  if (tok >= params.tokens) { return; }
  let m = (idx % per_token) / params.max_rank;
  let r = idx % params.max_rank;
  let adapter = row_adapter[tok];
  if (adapter == NO_ADAPTER) { return; }
  let e = directory[(adapter * params.layers + params.layer) * params.targets_per_layer + params.targets[m]];
  if (r >= e.z) { return; }
  let x_base = params.x_offset + tok * params.x_stride;
  let a_base = e.x + r * params.in_dim;
  var acc = 0.0;
  for (var i = 0u; i < params.in_dim; i++) {
    acc += pool[a_base + i] * x[x_base + i];
  }
  t[tok * params.t_stride + m * params.max_rank + r] = acc;
}
