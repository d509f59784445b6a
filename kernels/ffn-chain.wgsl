// A layer's O, gate|up and down decode products, each with its tail (the FFN norm, the gated
// activation, the next layer's norm), in ONE dispatch (kernels/ffn-chain.ts): WORKGROUPS workgroups, one
// per llvmpipe compute thread, run each product's workgroups in turn (product_body_o, _gu, _dn: the
// engine's rows kernel, its module-scope names suffixed, wgsl-namespace.ts) with a grid barrier after O
// and after gate|up. The engine gives each product a dispatch of its own, 25-60 µs on llvmpipe, nearly all
// of it waking the threads; a barrier costs 3-4 µs.
//
// The barrier and the end-of-dispatch check of llvmpipe's loop budget are chain-grid.wgsl's.
//
// ROWS_O, ROWS_GU and ROWS_DN (rows an invocation of each product computes) come from ffn-chain.ts.

struct ChainParams {
  // The dispatch's arrival word in the grid (chain-grid.wgsl): its place among the step's chains.
  grid_slot: u32,
  // This step's three products' params in `phases` (one triple per rows-of-x count).
  phase0: u32,
  // 2: the trip count of the loop that checks, at the end, that llvmpipe's loop budget was not spent.
  two: u32,
}

@group(1) @binding(0) var<uniform> chain: ChainParams;
@group(0) @binding(CHAIN_PHASES) var<storage, read> phases: array<Params>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  spins_left = SPIN_BUDGET;
  params_o = phases[chain.phase0];
  params_gu = phases[chain.phase0 + 1u];
  params_dn = phases[chain.phase0 + 2u];
  var groups = (params_o.n + WG * ROWS_O - 1u) / (WG * ROWS_O);
  for (var v = wg.x; v < groups; v += WORKGROUPS) { product_body_o(vec3u(v, 0u, 0u), lid, vec3u(groups, 1u, 1u)); }
  arrive(chain.grid_slot, WORKGROUPS, lid);
  groups = (params_gu.n + WG * ROWS_GU - 1u) / (WG * ROWS_GU);
  for (var v = wg.x; v < groups; v += WORKGROUPS) { product_body_gu(vec3u(v, 0u, 0u), lid, vec3u(groups, 1u, 1u)); }
  arrive(chain.grid_slot, 2u * WORKGROUPS, lid);
  groups = (params_dn.n + WG * ROWS_DN - 1u) / (WG * ROWS_DN);
  for (var v = wg.x; v < groups; v += WORKGROUPS) { product_body_dn(vec3u(v, 0u, 0u), lid, vec3u(groups, 1u, 1u)); }
  budget_check(chain.two, lid);
}
