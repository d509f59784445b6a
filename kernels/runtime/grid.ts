/**
 * Spread `n` workgroups over x and y so no dimension exceeds WebGPU's guaranteed 65535; shaders recover
 * the linear index as `wg.x + wg.y * 65535u`.
 */
export const GRID_X = 65535;
export function grid2d(n: number): [number, number] {
  if (n <= GRID_X) return [Math.max(1, n), 1];
  return [GRID_X, Math.ceil(n / GRID_X)];
}
