/** In a browser the only way to WebGPU is `navigator.gpu`; the browser picks the adapter. */
import type { AdapterCandidate } from '../gpu/select.ts';

export function browserAdapterCandidates(): AdapterCandidate[] {
  return [
    {
      name: 'browser',
      async open() {
        const gpu = (globalThis.navigator as Navigator | undefined)?.gpu;
        if (!gpu) return 'navigator.gpu is missing (WebGPU disabled or not a secure context)';
        let adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
        let featureLevel: 'core' | 'compatibility' = 'core';
        if (!adapter) {
          adapter = await gpu.requestAdapter({ featureLevel: 'compatibility' } as GPURequestAdapterOptions);
          featureLevel = 'compatibility';
        }
        if (!adapter) return 'navigator.gpu.requestAdapter() returned null';
        const info = adapter.info as GPUAdapterInfo & { isFallbackAdapter?: boolean };
        const software = Boolean(info.isFallbackAdapter) || /swiftshader|llvmpipe/i.test(`${info.description} ${info.device} ${info.architecture}`);
        return { adapter, software, featureLevel, wgslFeatures: new Set((gpu as GPU & { wgslLanguageFeatures?: Iterable<string> }).wgslLanguageFeatures ?? []) };
      },
    },
  ];
}
