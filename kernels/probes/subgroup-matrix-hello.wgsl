// The smallest use of int8 subgroup matrices (chromium_experimental_subgroup_matrix): one subgroup
// multiplies a 16 x 32 left matrix (rows of w, row-major, `left_stride` bytes apart from byte
// `left_offset`) by a 32 x 16 right one (x's tokens `right_stride` bytes apart from `right_offset`, so
// column-major) and stores the 16 x 16 i32 result row-major. LOAD_LEFT, LOAD_RIGHT and STORE stand for
// the builtins' calls in the syntax of the Dawn at hand (subgroup-matrix.ts writes them either way).
enable subgroups;
enable chromium_experimental_subgroup_matrix;

struct Params {
  left_offset: u32,
  left_stride: u32,
  right_offset: u32,
  right_stride: u32,
}

@group(0) @binding(0) var<storage, read> w: array<i32>;
@group(0) @binding(1) var<storage, read> x: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<i32>;
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(32)
fn main() {
  let a = LOAD_LEFT(w, params.left_offset, params.left_stride);
  let b = LOAD_RIGHT(x, params.right_offset, params.right_stride);
  let c = subgroupMatrixMultiply<i32>(a, b);
  STORE(out, 0u, c, 16u);
}
