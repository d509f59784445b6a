// The grid barrier of a chain (ffn-chain.wgsl, qkv-chain.wgsl): WORKGROUPS workgroups, one per llvmpipe
// compute thread, run the phases of one dispatch and meet between them. llvmpipe runs a dispatch's
// workgroups on its thread pool, each workgroup to its end, so with one workgroup a thread (the engine
// knows the pool, having pinned it) they all run at once: a barrier never waits on a workgroup that has
// not started.
//
// A barrier waits at most the budget of loop passes this invocation has left (llvmpipe ends every loop of
// an invocation after 65535 passes in all, silently; the chain's wrapper gives the phases' loops theirs
// first); one that gives up counts itself in grid[1], as does a dispatch whose budget ran out all the
// same (budget_check at its end), and the engine runs that step again one dispatch a kernel. Each chain
// dispatch of a step counts its arrivals in a word of its own, grid[2 + its slot] (zeroed as the step
// begins), so a dispatch's goals depend on no other's: a profile may replay any of them alone.

@group(0) @binding(CHAIN_GRID) var<storage, read_write> grid: array<atomic<u32>>;

override WG: u32 = 16u;
override WORKGROUPS: u32 = 2u;
override SPIN_BUDGET: u32 = 30000u;

var<private> spins_left: u32;

// Waits until word `w` counts `goal` arrivals, or counts itself failed in grid[1] when its budget runs out.
fn grid_wait(w: u32, goal: u32) {
  loop {
    // Four tests a pass: the budget counts passes, not tests.
    if (atomicLoad(&grid[w]) >= goal) { return; }
    if (atomicLoad(&grid[w]) >= goal) { return; }
    if (atomicLoad(&grid[w]) >= goal) { return; }
    if (atomicLoad(&grid[w]) >= goal) { return; }
    if (spins_left == 0u) {
      atomicAdd(&grid[1], 1u);
      return;
    }
    spins_left -= 1u;
  }
}

// The dispatch's workgroups meet: `slot` the dispatch's (its word grid[2 + slot]), `goal` its arrivals so far.
fn arrive(slot: u32, goal: u32, lid: u32) {
  if (lid == 0u) { atomicAdd(&grid[2u + slot], 1u); }
  grid_wait(2u + slot, goal);
}

// Where llvmpipe's loop budget ran out, every loop since stopped short, silently (each after the pass it
// was in): a loop of `two` (2, a trip count the compiler cannot see) passes then runs one, and the
// dispatch counts itself failed.
fn budget_check(two: u32, lid: u32) {
  var ran = 0u;
  for (var i = 0u; i < two; i++) { ran += 1u; }
  if (ran != 2u && lid == 0u) { atomicAdd(&grid[1], 1u); }
}
