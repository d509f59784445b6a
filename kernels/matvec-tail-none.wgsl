// after_rows() for products built without a tail (see matvec-tail.wgsl).
fn after_rows(nwg: vec3u, n0: u32) {}
