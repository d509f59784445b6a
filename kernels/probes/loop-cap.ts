/**
 * llvmpipe (Mesa 22.3) silently stops any shader loop after 65535 iterations and goes on with the
 * partial result. Every probe keeps its loops at or under this many iterations, and checks its output
 * against the CPU so an adapter that cuts shorter is caught instead of reported as fast.
 */
export const MAX_LOOP_ITERS = 65535;
