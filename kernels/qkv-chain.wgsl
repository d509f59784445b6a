// A layer's stacked Q|K|V decode product with its RoPE + KV-store tail, then attention, in ONE dispatch
// (kernels/qkv-chain.ts), as ffn-chain.wgsl runs the layer's FFN: WORKGROUPS workgroups, one per llvmpipe
// compute thread, run the product's workgroups (product_body_qkv), meet at a grid barrier, then run
// attention's invocations (attention_body_att: the serial vec4 kernel, split over positions or not, as
// the engine would dispatch it). The barrier and the end-of-dispatch check of llvmpipe's loop budget are
// ffn-chain.wgsl's (grid_wait, arrive, spins_left), joined in by qkv-chain.ts.

struct QkvChainParams {
  // The dispatch's arrival word in the grid (chain-grid.wgsl): its place among the step's chains.
  grid_slot: u32,
  // The product's params in `phases`: one per rows-of-x count.
  phase0: u32,
  // 2: the trip count of the end-of-dispatch check (ffn-chain.wgsl).
  two: u32,
  // Attention's invocations: tokens x query-head groups x splits.
  att_items: u32,
  att: Params_att,
}

@group(1) @binding(0) var<uniform> chain: QkvChainParams;
@group(0) @binding(CHAIN_PHASES) var<storage, read> phases: array<Params>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  spins_left = SPIN_BUDGET;
  params_qkv = phases[chain.phase0];
  params_att = chain.att;
  var groups = (params_qkv.n + WG * ROWS_QKV - 1u) / (WG * ROWS_QKV);
  for (var v = wg.x; v < groups; v += WORKGROUPS) { product_body_qkv(vec3u(v, 0u, 0u), lid, vec3u(groups, 1u, 1u)); }
  arrive(chain.grid_slot, WORKGROUPS, lid);
  groups = (chain.att_items + WG - 1u) / WG;
  for (var v = wg.x; v < groups; v += WORKGROUPS) { attention_body_att(vec3u(v * WG + lid, 0u, 0u), vec3u(groups, 1u, 1u)); }
  budget_check(chain.two, lid);
}
