// The decode products of a step in one dispatch (probes/measure-persistent.ts): WORKGROUPS workgroups,
// one per llvmpipe compute thread, run the rows kernel's body (matvec-rows-blocks.wgsl, renamed
// product_body, its params a private copy) over each product's workgroups in turn, with a grid barrier
// between products, where the engine gives each product a dispatch of its own (25-60 µs on llvmpipe,
// nearly all of it waking the threads). llvmpipe runs a dispatch's workgroups on its pool of threads,
// each to its end, so with one workgroup a thread (pinned, and no other dispatch running) every workgroup
// runs at once and a barrier cannot wait on one that never starts. A barrier that waits longer than
// SPIN_LIMIT spins (llvmpipe also ends every loop of an invocation after 65535 passes in all) counts
// itself failed, so a run whose threads were not all there is reported, not trusted.
//
// Each product's rows start at its own vec4 `bias_offset` of the one weight texture (row-split handles:
// half index, vec4 index). `grid` words: 0 arrivals, 1 failed barriers, 2 the fewest arrivals of its
// product a workgroup saw past a barrier (all of them, WORKGROUPS, where every barrier held; set to the
// largest u32 before a run).

@group(0) @binding(3) var<storage, read> phases: array<Params>;
@group(0) @binding(4) var<storage, read_write> grid: array<atomic<u32>>;

override WORKGROUPS: u32 = 2u;
override SPIN_LIMIT: u32 = 20000u;

fn grid_sync(goal: u32) {
  var spins = 0u;
  loop {
    if (atomicLoad(&grid[0]) >= goal || spins >= SPIN_LIMIT) { break; }
    spins += 1u;
  }
  if (atomicLoad(&grid[0]) < goal) { atomicAdd(&grid[1], 1u); }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let count = arrayLength(&phases);
  for (var i = 0u; i < count; i++) {
    params = phases[i];
    let groups = (params.n + WG * ROWS - 1u) / (WG * ROWS);
    for (var v = wg.x; v < groups; v += WORKGROUPS) { product_body(vec3u(v, 0u, 0u), lid, vec3u(groups, 1u, 1u)); }
    if (lid == 0u) { atomicAdd(&grid[0], 1u); }
    grid_sync((i + 1u) * WORKGROUPS);
    if (lid == 0u) { atomicMin(&grid[2], atomicLoad(&grid[0]) - i * WORKGROUPS); }
  }
}
