import { describe, expect, it } from 'vitest';
import { llamaPrebuilts, packageClosure } from '../../bench/gpu/bundle.ts';

describe('GPU-host pack: packages that travel beside the bundle', () => {
  it("takes node-llama-cpp's dependencies and only the chosen prebuilt binaries", () => {
    const dirs = packageClosure(['node-llama-cpp'], new Set(llamaPrebuilts(false)));
    const names = dirs.map((d) => d.slice(d.lastIndexOf('node_modules/') + 'node_modules/'.length));
    expect(names).toContain('node-llama-cpp');
    expect(names).toContain('lifecycle-utils');
    expect(names).toContain('@node-llama-cpp/linux-x64');
    expect(names).toContain('@node-llama-cpp/linux-x64-vulkan');
    // Other platforms, CUDA when left out, and the optional peer typescript stay behind.
    expect(names).not.toContain('@node-llama-cpp/linux-arm64');
    expect(names).not.toContain('@node-llama-cpp/linux-x64-cuda');
    expect(names).not.toContain('typescript');
    expect(llamaPrebuilts(true)).toContain('@node-llama-cpp/linux-x64-cuda-ext');
  });

  it('names a package that is not installed', () => {
    expect(() => packageClosure(['no-such-package-svc'], new Set())).toThrow(/no-such-package-svc is not installed/);
  });
});
