// The smallest use of int8 subgroup matrices (chromium_experimental_subgroup_matrix): one subgroup
// multiplies a 16 x 32 left matrix (rows of w, row-major, a row every 32 bytes) by a 32 x 16 right one
// (x stored a token's 32 bytes at a time, so column-major) and stores the 16 x 16 i32 result row-major.
// LOAD_LEFT, LOAD_RIGHT and STORE stand for the builtins' calls in the syntax of the Dawn at hand
// (subgroup-matrix.ts writes them either way).
enable subgroups;
enable chromium_experimental_subgroup_matrix;

@group(0) @binding(0) var<storage, read> w: array<i32>;
@group(0) @binding(1) var<storage, read> x: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<i32>;

@compute @workgroup_size(32)
fn main() {
  let a = LOAD_LEFT(w, 0u, 32u);
  let b = LOAD_RIGHT(x, 0u, 32u);
  let c = subgroupMatrixMultiply<i32>(a, b);
  STORE(out, 0u, c, 16u);
}
