/**
 * Exact agreement with llama.cpp on the recorded fixtures (scripts/fixtures/tokenize.ts): token ids
 * with and without special-token parsing, detokenized text, and the special token sets.
 */
import { describe, expect, it } from 'vitest';
import type { Tokenizer } from '../../engine/tokenizer/index.ts';
import type { FixtureVariant } from '../../scripts/fixtures/fixture-format.ts';
import { BPE_VARIANTS } from '../../scripts/fixtures/gpt2-bpe-model.ts';
import { loadFixture, variantTokenizer } from './load.ts';

const addBosByPre = new Map(BPE_VARIANTS.map((v) => [v.pre, v.addBos]));

const FIXTURES = ['stories260K', 'llama-2-tiny-random', 'TinyStories-656K', 'gpt2-bpe'];

/** Side-by-side rows for every text where ours differs, so a failure names the strings. */
function mismatches<T>(texts: readonly string[], indices: Iterable<string | number>, ours: (i: number) => T, theirs: (i: number) => T) {
  const rows: { text: string; llamaCpp: T; ours: T }[] = [];
  for (const key of indices) {
    const i = Number(key);
    const a = ours(i);
    const b = theirs(i);
    if (JSON.stringify(a) !== JSON.stringify(b)) rows.push({ text: texts[i], llamaCpp: b, ours: a });
  }
  return rows;
}

for (const name of FIXTURES) {
  const fixture = loadFixture(name);
  for (const v of fixture.variants) {
    const label = v.model ?? `gpt2 vocabulary, pre-tokenizer ${v.pre}`;
    describe(`${name}: ${label}`, () => {
      let tok: Tokenizer;
      const get = async () => (tok ??= await variantTokenizer(v, addBosByPre));
      const texts = fixture.texts;
      const all = texts.map((_, i) => i);

      it('has llama.cpp special tokens and settings', async () => {
        const t = await get();
        expect({ vocabSize: t.vocabSize, bos: t.bos ?? null, eos: t.eos ?? null, addBos: t.addBos }).toEqual({
          vocabSize: v.vocabSize,
          bos: v.bos,
          eos: v.eos,
          addBos: v.addBos,
        });
        const eog: number[] = [];
        const hidden: number[] = [];
        for (let id = 0; id < t.vocabSize; id++) {
          if (t.isEndOfGeneration(id)) eog.push(id);
          if (t.isControl(id)) hidden.push(id);
        }
        expect(eog).toEqual(v.eog);
        expect(hidden).toEqual(v.hidden);
      });

      it(`encodes all ${texts.length} texts to llama.cpp's ids`, async () => {
        const t = await get();
        expect(mismatches(texts, all, (i) => t.encode(texts[i]), (i) => v.ids[i])).toEqual([]);
      });

      it('encodes special-looking texts like llama.cpp with parseSpecial', async () => {
        const t = await get();
        const idx = Object.keys(v.idsParseSpecial);
        expect(idx.length).toBeGreaterThan(0);
        expect(mismatches(texts, idx, (i) => t.encode(texts[i], { parseSpecial: true }), (i) => v.idsParseSpecial[i])).toEqual([]);
      });

      it("decodes llama.cpp's ids to llama.cpp's text", async () => {
        const t = await get();
        expect(mismatches(texts, all, (i) => t.decode(v.ids[i]), (i) => v.decoded[i])).toEqual([]);
        const noBos = Object.keys(v.decodedWithoutBos);
        expect(mismatches(texts, noBos, (i) => t.decode(v.ids[i].slice(1)), (i) => v.decodedWithoutBos[i])).toEqual([]);
      });

      it('decodes split characters and control tokens like llama.cpp', async () => {
        const t = await get();
        const wrong = v.decodeCases.filter((c) => t.decode(c.ids, { special: c.special }) !== c.text);
        expect(wrong).toEqual([]);
      });

      // TinyStories-656K cannot spell split characters at all (no byte tokens), so it has no prefix cases.
      const prefixes = v.decodeCases.filter((c) => c.kind === 'prefix');
      if (prefixes.length > 0) it('streams every prefix to the text llama.cpp gives for it, holding back split characters', async () => {
        const t = await get();
        const wrong: { ids: number[]; llamaCpp: string; streamed: string }[] = [];
        for (const c of prefixes) {
          const d = t.streamDecoder();
          const streamed = c.ids.map((id) => d.push(id)).join('') + d.flush();
          if (streamed !== c.text) wrong.push({ ids: c.ids, llamaCpp: c.text, streamed });
        }
        expect(wrong).toEqual([]);
      });
    });
  }
}

/** Fixture coverage the parity tests rely on; a regenerated fixture that lost a group fails here. */
describe('tokenizer fixtures', () => {
  const covered = (v: FixtureVariant) => v.ids.length;
  it('cover the BPE pre-tokenizers and the three SentencePiece models', () => {
    const bpe = loadFixture('gpt2-bpe');
    expect(bpe.variants.map((v) => v.pre)).toEqual(BPE_VARIANTS.map((v) => v.pre));
    for (const name of ['stories260K', 'llama-2-tiny-random']) expect(covered(loadFixture(name).variants[0])).toBeGreaterThanOrEqual(100);
    expect(covered(loadFixture('TinyStories-656K').variants[0])).toBeGreaterThanOrEqual(40);
  });
});
