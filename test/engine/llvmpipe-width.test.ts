/**
 * llvmpipe runs 16 lanes (512-bit vectors) where the CPU has AVX-512, and the tiled products fill them
 * (kernels/matmul.ts WG_N); the width comes from the adapter's own strings into GpuCaps.cpuLanes.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { llvmpipeVectorWidth } from '../../engine/platform/node-gpu.ts';
import { openNodeDevice } from '../../engine/platform/node.ts';
import { cpuLanesOf } from '../../kernels/runtime/caps.ts';

const info = (device: string, description = '') => ({ vendor: '', architecture: '', device, description }) as GPUAdapterInfo;

describe('llvmpipe vector width', () => {
  it('is 512 bits where /proc/cpuinfo lists avx512f, Mesa\'s default elsewhere, and a user\'s own setting wins', () => {
    const avx512 = 'processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512bw fma\n';
    const avx2 = 'processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\nbugs\t\t: avx512f_fake\n';
    expect(llvmpipeVectorWidth({}, avx512)).toEqual({ LP_NATIVE_VECTOR_WIDTH: '512' });
    expect(llvmpipeVectorWidth({}, avx2)).toEqual({});
    expect(llvmpipeVectorWidth({ LP_NATIVE_VECTOR_WIDTH: '256' }, avx512)).toEqual({});
  });

  it('reads the lanes from the adapter strings', () => {
    expect(cpuLanesOf(info('llvmpipe-llvm-15-0-6-512-bits-'))).toBe(16);
    expect(cpuLanesOf(info('', 'llvmpipe (LLVM 15.0.6, 256 bits)'))).toBe(8);
    expect(cpuLanesOf(info('SwiftShader Device (Subzero)'))).toBe(0);
    expect(cpuLanesOf(undefined)).toBe(0);
    expect(cpuLanesOf(info('llvmpipe-llvm-99-0-0-65536-bits-'))).toBe(64);
  });

  it('opens llvmpipe at the width this machine should get', async () => {
    const sel = await openNodeDevice('llvmpipe');
    try {
      const avx512 = /^flags\s*:.*\bavx512f\b/m.test(readFileSync('/proc/cpuinfo', 'utf8'));
      const forced = process.env.LP_NATIVE_VECTOR_WIDTH;
      const want = forced !== undefined ? Number(forced) / 32 : avx512 ? 16 : 8;
      expect(sel.caps.cpuLanes).toBe(want);
    } finally {
      sel.device.destroy();
    }
  });
});
