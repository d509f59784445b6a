/**
 * Dependencies point one way: adapters → protocol → engine → kernels → ggml (the GGUF/GGML type
 * definitions everything below the engine needs). A file may import its own layer or any layer below,
 * never one above; the command line, bench, scripts and tests sit on top of all of them.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const LAYERS = ['ggml', 'kernels', 'engine', 'protocol', 'adapters'] as const;

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return filesUnder(p);
    return /\.(ts|mjs|js)$/.test(name) ? [p] : [];
  });
}

/** Relative import specifiers of a source file (static, dynamic and re-exports). */
function importsOf(source: string): string[] {
  const found: string[] = [];
  const re = /(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|import\s+['"]([^'"]+)['"]/g;
  for (const m of source.matchAll(re)) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (spec.startsWith('.')) found.push(spec.replace(/\?raw$/, ''));
  }
  return found;
}

function layerOf(path: string): number {
  const top = relative(ROOT, path).split(/[\\/]/)[0];
  return LAYERS.indexOf(top as (typeof LAYERS)[number]);
}

describe('import direction', () => {
  it('no file imports a layer above its own', () => {
    const wrong: string[] = [];
    for (const layer of LAYERS) {
      for (const file of filesUnder(join(ROOT, layer))) {
        const from = layerOf(file);
        for (const spec of importsOf(readFileSync(file, 'utf8'))) {
          const target = resolve(dirname(file), spec);
          const to = layerOf(target);
          if (to > from) wrong.push(`${relative(ROOT, file)} imports ${relative(ROOT, target)} (${LAYERS[from]} → ${LAYERS[to]})`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it('the check sees imports of every form', () => {
    const src = `import { a } from '../engine/x.ts';\nimport type { B } from "../protocol/y.ts";\nexport { c } from './z.ts';\nconst m = await import('../adapters/w.ts');\nimport '../kernels/side.ts';\nimport code from './k.wgsl?raw';\nimport { z } from 'zod';`;
    expect(importsOf(src)).toEqual(['../engine/x.ts', '../protocol/y.ts', './z.ts', '../adapters/w.ts', '../kernels/side.ts', './k.wgsl']);
  });
});
