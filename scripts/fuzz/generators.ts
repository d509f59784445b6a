/** The weighted mix: a category by its share, then a generator of that category by its weight. */
import type { Case, Category, GenContext, Generator } from './cases.ts';
import { authGenerators } from './generators/auth.ts';
import { connectionGenerators } from './generators/connections.ts';
import { encodingGenerators } from './generators/encodings.ts';
import { schemaGenerators } from './generators/schema.ts';
import { sizeGenerators } from './generators/sizes.ts';
import { toolGenerators } from './generators/tools.ts';
import { validGenerators } from './generators/valid.ts';

/** Share of cases per category (most are cheap refusals; `valid` keeps the model generating throughout). */
export const MIX: Record<Category, { share: number; generators: [Generator, number][] }> = {
  schema: { share: 0.22, generators: schemaGenerators },
  tools: { share: 0.16, generators: toolGenerators },
  sizes: { share: 0.17, generators: sizeGenerators },
  encodings: { share: 0.22, generators: encodingGenerators },
  auth: { share: 0.08, generators: authGenerators },
  connections: { share: 0.08, generators: connectionGenerators },
  valid: { share: 0.07, generators: validGenerators },
};

function weighted<T>(g: GenContext, items: [T, number][]): T {
  const total = items.reduce((s, [, w]) => s + w, 0);
  let r = g.rng.next() * total;
  for (const [item, w] of items) {
    r -= w;
    if (r < 0) return item;
  }
  return items[items.length - 1][0];
}

export function nextCase(g: GenContext): Case {
  const category = weighted(g, Object.entries(MIX).map(([c, m]) => [c as Category, m.share]));
  return weighted(g, MIX[category].generators)(g);
}
