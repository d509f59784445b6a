// prefetch_next() for products built without a prefetch binding (see matvec-prefetch.wgsl).
fn prefetch_next(i: u32, invocations: u32) -> u32 {
  return 0u;
}
