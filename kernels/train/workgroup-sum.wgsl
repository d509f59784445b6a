// The tree sum over a workgroup that the row-wise training kernels share (joined to each): every
// invocation passes its partial sum, and the workgroup's total is left in partial[0]. Call it from uniform
// control flow (it holds barriers); a caller that writes `partial` again after reading the total must put
// a workgroupBarrier() between.
//
// Callers read partial[0] themselves rather than take a return value: returning it changed the last bit
// of rmsnorm-backward's dx on llvmpipe (the code after it compiled differently), and reading it where
// the kernels always did keeps every kernel's output as it was.

var<workgroup> partial: array<f32, WG>;

fn workgroup_sum(li: u32, v: f32) {
  partial[li] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (li < s) { partial[li] += partial[li + s]; }
    workgroupBarrier();
  }
}
