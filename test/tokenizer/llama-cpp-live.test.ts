/**
 * Differential test against llama.cpp itself (node-llama-cpp, CPU, vocabulary only): seeded random
 * strings that the fixtures do not hold must encode and decode exactly as llama.cpp does.
 */
import { join } from 'node:path';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { getLlama, LlamaLogLevel, type Llama, type Token } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Tokenizer } from '../../engine/tokenizer/index.ts';
import { BPE_VARIANTS, gpt2BpeGguf } from '../../scripts/fixtures/gpt2-bpe-model.ts';
import { gpt2Tokenizer, modelTokenizer } from './load.ts';
import { sharedModel } from '../helpers/models.ts';
import { tokenizerStressTexts } from './random-text.ts';

const TEXTS = tokenizerStressTexts(20240611, 250);

let llama: Llama;
let tmp: string;
beforeAll(async () => {
  llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  tmp = mkdtempSync(join(tmpdir(), 'svc-tokenizer-live-'));
});
afterAll(async () => {
  await llama?.dispose();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** Every text whose ids or decoded text differ from llama.cpp's, with both answers. */
async function differences(modelPath: string, tok: Tokenizer, texts: readonly string[]) {
  const model = await llama.loadModel({ modelPath, vocabOnly: true });
  try {
    const t = model.tokens;
    const out: { text: string; parseSpecial: boolean; llamaCpp: unknown; ours: unknown }[] = [];
    for (const text of texts) {
      for (const parseSpecial of [false, true]) {
        // node-llama-cpp tokenizes with add_special=false; add_special=true adds just BOS/EOS.
        const ref = [...(t.shouldPrependBosToken && t.bos !== null ? [t.bos] : []), ...model.tokenize(text, parseSpecial)];
        const ours = tok.encode(text, { parseSpecial });
        if (JSON.stringify(ours) !== JSON.stringify(ref)) out.push({ text, parseSpecial, llamaCpp: ref, ours });
        const refText = model.detokenize(ref as Token[], parseSpecial);
        const ourText = tok.decode(ref, { special: parseSpecial });
        if (ourText !== refText) out.push({ text, parseSpecial, llamaCpp: refText, ours: ourText });
      }
    }
    return out;
  } finally {
    await model.dispose();
  }
}

describe('agrees with llama.cpp on random strings', () => {
  it.each(['stories260K.gguf', 'llama-2-tiny-random.gguf'])('%s', async (file) => {
    expect(await differences(sharedModel(file), await modelTokenizer(file), TEXTS)).toEqual([]);
  });

  it('TinyStories-656K-Q8_0.gguf, on texts within its alphabet (llama.cpp aborts on others)', async () => {
    const tok = await modelTokenizer('TinyStories-656K-Q8_0.gguf');
    const alphabet = new Set<string>();
    for (let id = 0; id < tok.vocabSize; id++) for (const ch of tok.tokenText(id)) alphabet.add(ch);
    const spellable = tokenizerStressTexts(77, 3000).filter((s) => [...` ${s}`.replaceAll(' ', '\u2581')].every((ch) => alphabet.has(ch)));
    expect(spellable.length).toBeGreaterThan(50);
    expect(await differences(sharedModel('TinyStories-656K-Q8_0.gguf'), tok, spellable)).toEqual([]);
  });

  it.each(BPE_VARIANTS)('GPT-2 vocabulary with pre-tokenizer $pre', async ({ pre, addBos }) => {
    const modelPath = join(tmp, `gpt2-${pre}.gguf`);
    writeFileSync(modelPath, gpt2BpeGguf(pre, addBos));
    expect(await differences(modelPath, await gpt2Tokenizer(pre, addBos), TEXTS)).toEqual([]);
  });
});
