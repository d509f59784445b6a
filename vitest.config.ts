import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One Dawn device per worker; the software adapters are CPU-heavy, and the machine has two cores.
    pool: 'forks',
    maxWorkers: 2,
    // A guard against hangs, not a speed check (speed is bench/'s): SwiftShader compiles each pipeline
    // when it is made (a K-quant product's in 1-16 s) and runs the GPU kernels' tests slowly, so several
    // tests take 60-110 s in CI on two cores beside the other files, and 120 s timed out three of them
    // in recent runs.
    testTimeout: 240_000,
    hookTimeout: 240_000,
  },
});
