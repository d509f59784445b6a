// y[t, n .. n+3] = v, or += v when accumulating (a fused residual add), as one vec4: for the CPU
// rasterisers' tiled products (matmul.ts), y declared as vec4s (withVec4Y), its offset, stride and rows
// multiples of 4. llvmpipe runs every storage store as a loop over its SIMD lanes with a mask test per
// lane, so four rows in one store loop instead of four loops; the old value is always loaded and the
// sum selected, since llvmpipe runs both sides of a branch (masked) and the load costs less than that.
fn store4(t: u32, n: u32, v: vec4f) {
  let i = (params.y_offset + t * params.y_stride + n) >> 2u;
  let old = y[i];
  y[i] = select(v, old + v, params.accumulate != 0u);
}
