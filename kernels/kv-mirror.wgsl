// Gathers the KV rows a long step's attention reads into one linear run per sequence (engine/kv/kv-mirror.ts),
// which the step then copies into textures for attention-mirror.wgsl: on llvmpipe a texel load is a
// branchless gather where a storage load is a loop over the SIMD lanes, and a prefill token reads every
// earlier row of its sequence, so each row is loaded here once instead of once per token.
//
// Words are copied as they are (any KV format); a row is ROW_VEC4S vec4s (all KV heads of one position),
// one invocation a row, so its run and page are loaded once for the whole row.

struct Params {
  page_size: u32,
  max_pages: u32,
}

// Per sequence of the step (workgroup z): its slot (page-table row), its first row in the mirror, and
// how many rows (positions 0 .. rows - 1) it mirrors.
struct Run {
  slot: u32,
  first: u32,
  rows: u32,
  pad: u32,
}

override WG: u32 = 64u;
// Constant, so the copy loop below is unrolled.
override ROW_VEC4S: u32;

@group(0) @binding(0) var<storage, read> k_cache: array<vec4u>;
@group(0) @binding(1) var<storage, read> v_cache: array<vec4u>;
@group(0) @binding(2) var<storage, read> runs: array<Run>;
// Binding 3, the page table, and kv_row() come with attention-pages.wgsl.
@group(0) @binding(4) var<storage, read_write> k_out: array<vec4u>;
@group(0) @binding(5) var<storage, read_write> v_out: array<vec4u>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let run = runs[gid.z];
  let p = gid.x + gid.y * nwg.x * WG;
  if (p >= run.rows) { return; }
  let src = kv_row(run.slot, p) * ROW_VEC4S;
  let dst = (run.first + p) * ROW_VEC4S;
  for (var c = 0u; c < ROW_VEC4S; c++) {
    k_out[dst + c] = k_cache[src + c];
    v_out[dst + c] = v_cache[src + c];
  }
}
