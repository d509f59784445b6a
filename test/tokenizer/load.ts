/** Tokenizers and fixtures for the tokenizer tests, loaded the way the fixture script made them. */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseGguf } from '../../engine/gguf/parse.ts';
import { BytesSource } from '../../engine/loader/source.ts';
import { FileSource } from '../../engine/loader/file-source.ts';
import { createTokenizer, type Tokenizer } from '../../engine/tokenizer/index.ts';
import type { FixtureVariant, TokenizerFixture } from '../../scripts/fixtures/fixture-format.ts';
import { gpt2BpeGguf } from '../../scripts/fixtures/gpt2-bpe-model.ts';
import { sharedModel } from '../helpers/models.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export function loadFixture(name: string): TokenizerFixture {
  return JSON.parse(readFileSync(join(root, 'test/fixtures/tokenizer', `${name}.json`), 'utf8')) as TokenizerFixture;
}

export async function modelTokenizer(file: string): Promise<Tokenizer> {
  const src = new FileSource(sharedModel(file));
  try {
    return createTokenizer((await parseGguf(src)).metadata);
  } finally {
    await src.close();
  }
}

/** The GPT-2-vocabulary model for one pre-tokenizer, built in memory exactly as the fixture script builds it. */
export async function gpt2Tokenizer(pre: string, addBos?: boolean): Promise<Tokenizer> {
  const bytes = gpt2BpeGguf(pre, addBos);
  return createTokenizer((await parseGguf(new BytesSource(bytes, `gpt2-${pre}.gguf`))).metadata);
}

export async function variantTokenizer(v: FixtureVariant, addBosByPre: ReadonlyMap<string, boolean | undefined>): Promise<Tokenizer> {
  if (v.model) return modelTokenizer(v.model);
  if (!v.pre) throw new Error('fixture variant names neither a model nor a pre-tokenizer');
  return gpt2Tokenizer(v.pre, addBosByPre.get(v.pre));
}
