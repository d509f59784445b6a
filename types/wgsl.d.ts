// WGSL sources are imported as text: `import src from './x.wgsl?raw'`. Vite (vitest) does this natively;
// bin/wgsl-hook.mjs does it under Node, and build/esbuild-raw.ts under esbuild.
declare module '*.wgsl?raw' {
  const source: string;
  export default source;
}
