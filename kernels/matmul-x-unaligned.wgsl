// x[i .. i+3] for any i: two loads and a branch-free shuffle. At the very end of x the second load may
// fall past the binding; WebGPU's robust access keeps it in bounds and select() discards it.
fn x4(i: u32) -> vec4f {
  let a = i & 3u;
  let lo = x[i >> 2u];
  let hi = x[(i >> 2u) + 1u];
  let v = select(lo, vec4f(lo.yzw, hi.x), a == 1u);
  return select(select(v, vec4f(lo.zw, hi.xy), a == 2u), vec4f(lo.w, hi.xyz), a == 3u);
}

fn x1(i: u32) -> f32 {
  return x[i >> 2u][i & 3u];
}
