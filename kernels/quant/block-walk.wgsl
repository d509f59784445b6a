// Part of the Q8_0, Q4_0, Q4_K and Q6_K decoders (quant/layouts.ts BLOCK_WALK_TYPES), for the kernels
// that walk a weight row 32 elements at a time (matvec-rows-blocks.wgsl, matmul-regs-blocks.wgsl). Each
// decoder provides:
//   - WALK_STEP: blocks a step, those that share weight words (Q4_K's 8 sub-blocks, Q6_K's half-blocks);
//   - w_step(r, lead, b, &state): loads what the step starting at block b (a multiple of WALK_STEP)
//     shares; `lead` is the handle of a row in r's group (layouts.ts weightRowGroup) that every row the
//     kernel walks together passes, so words the group's rows share (the row-split types' scale vec4s)
//     are one load for all of them; a kernel whose rows may span groups passes r itself;
//   - w_step_block(r, b, i, &state) -> WBlock: block b + i of that step, called for i = 0, 1, ... in
//     order after w_step (a decoder may keep words loaded for one block to the next: Q4_K's pairs), i a
//     literal where the kernel writes the step out, so the decoder's choices between blocks fold away;
//   - block_dot(k, x): a WBlock dotted with 32 x values (XBlock).

// 32 x values in order (lo: 0..15, hi: 16..31, four per column) times d, and s, the sum of the 32
// (for types whose quants carry an offset); from matmul-x-block-f32.wgsl or matmul-x-block-q8.wgsl.
struct XBlock {
  lo: mat4x4f,
  hi: mat4x4f,
  d: f32,
  s: f32,
}

fn x_sum(lo: mat4x4f, hi: mat4x4f) -> f32 {
  return dot(lo[0] + lo[1] + lo[2] + lo[3] + hi[0] + hi[1] + hi[2] + hi[3], vec4f(1.0));
}
