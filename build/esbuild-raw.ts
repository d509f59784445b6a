/** esbuild plugin: `import src from './x.wgsl?raw'` bundles the file's text, as Vite and bin/wgsl-hook.mjs do. */
import { readFile } from 'node:fs/promises';
import { resolve, dirname } from 'node:path';
import type { Plugin } from 'esbuild';

export const rawPlugin: Plugin = {
  name: 'raw',
  setup(build) {
    build.onResolve({ filter: /\?raw$/ }, (args) => ({
      path: resolve(dirname(args.importer), args.path.slice(0, -'?raw'.length)),
      namespace: 'raw',
    }));
    build.onLoad({ filter: /.*/, namespace: 'raw' }, async (args) => ({
      contents: await readFile(args.path, 'utf8'),
      loader: 'text',
    }));
  },
};
