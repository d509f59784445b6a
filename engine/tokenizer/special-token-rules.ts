/**
 * What llama.cpp decides from token texts when it loads a vocabulary (llama_vocab::impl::load), since
 * GGUF files often leave it out: which tokens are EOT/EOM/FIM, which end generation, which are really
 * control tokens, and which eat whitespace next to them.
 */
import type { GgufMetadata } from '../gguf/parse.ts';
import { Attr } from './attrs.ts';
import { ALWAYS_RENDERED_TEXTS, EOG_TEXTS, EOM_TEXTS, EOT_TEXTS, FIM_TEXTS } from './special-texts.ts';
import { utf8Length } from './utf8.ts';
import type { SpecialIds } from './vocab.ts';

const DETECTED: readonly [keyof SpecialIds, readonly string[]][] = [
  ['eot', EOT_TEXTS],
  ['eom', EOM_TEXTS],
  ['fimPre', FIM_TEXTS.pre],
  ['fimSuf', FIM_TEXTS.suf],
  ['fimMid', FIM_TEXTS.mid],
  ['fimPad', FIM_TEXTS.pad],
  ['fimRep', FIM_TEXTS.rep],
  ['fimSep', FIM_TEXTS.sep],
];

/** Fields each candidate text can fill. */
const DETECT_BY_TEXT = new Map<string, (keyof SpecialIds)[]>();
for (const [field, list] of DETECTED) for (const t of list) DETECT_BY_TEXT.set(t, [...(DETECT_BY_TEXT.get(t) ?? []), field]);

/**
 * Fills special ids the metadata left out, fixes attributes by text, and returns the
 * end-of-generation set. Where several tokens qualify for one id, llama.cpp takes whichever its hash
 * map yields first; we take the lowest id.
 */
export function applySpecialTokenRules(texts: readonly string[], ids: ReadonlyMap<string, number>, attrs: Uint16Array, special: SpecialIds): Set<number> {
  // llama.cpp runs these rules over its text-to-id map, so a text listed twice counts once, for its last id.
  const live = (id: number) => ids.get(texts[id]) === id;

  // llama.cpp makes these passes one after another, but each reads and writes only the token at hand,
  // so one pass doing the steps per token in the same order gives the same result.
  const eogByText: number[] = [];
  for (let id = 0; id < texts.length; id++) {
    if (!live(id)) continue;
    const text = texts[id];
    for (const field of DETECT_BY_TEXT.get(text) ?? []) {
      if (special[field] === undefined) {
        special[field] = id;
        attrs[id] |= Attr.CONTROL;
      }
    }
    if (attrs[id] & Attr.CONTROL && text.includes('unused')) attrs[id] |= Attr.UNUSED;
    if (EOG_TEXTS.has(text)) {
      eogByText.push(id);
      attrs[id] |= Attr.CONTROL;
    }
    if (ALWAYS_RENDERED_TEXTS.has(text)) attrs[id] = Attr.USER_DEFINED;
  }

  const eog = new Set<number>();
  for (const id of [special.fimPad, special.fimRep, special.fimSep, ...eogByText, special.eos, special.eot, special.eom]) {
    if (id !== undefined) eog.add(id);
  }

  const eogWithText = (t: string) => [...eog].find((id) => texts[id] === t);
  // o200k_harmony and solar-open end a message with <|end|> but go on generating: not EOG there.
  const end = eogWithText('<|end|>');
  const call = eogWithText('<|call|>') ?? eogWithText('<|calls|>');
  if (end !== undefined && call !== undefined && (eogWithText('<|return|>') !== undefined || eogWithText('<|flush|>') !== undefined)) {
    eog.delete(end);
    attrs[end] = Attr.USER_DEFINED;
  }
  // Gemma 4 uses </s> as ordinary text.
  const s = eogWithText('</s>');
  if (s !== undefined && eogWithText('<|tool_response>') !== undefined) {
    eog.delete(s);
    attrs[s] = Attr.NORMAL;
  }
  return eog;
}

/**
 * Tokens cut out of text before encoding, longest UTF-8 text first so that a special token is not
 * split by a shorter one inside it (llama.cpp's cache_special_tokens; ties in id order).
 */
export function specialTokensLongestFirst(texts: readonly string[], attrs: Uint16Array): number[] {
  const list: { id: number; bytes: number }[] = [];
  for (let id = 0; id < texts.length; id++) {
    if (attrs[id] & (Attr.CONTROL | Attr.USER_DEFINED | Attr.UNKNOWN)) list.push({ id, bytes: utf8Length(texts[id]) });
  }
  return list.sort((a, b) => b.bytes - a.bytes || a.id - b.id).map((t) => t.id);
}

/**
 * Some models eat whitespace next to their special tokens. GGUF has no field for it, so llama.cpp
 * decides by model name, and so do we.
 */
export function applyStripRules(md: GgufMetadata, ids: ReadonlyMap<string, number>, attrs: Uint16Array, specials: readonly number[]): void {
  const name = md.optionalString('general.name')?.toLowerCase() ?? '';
  const pre = md.optionalString('tokenizer.ggml.pre') ?? '';
  const arch = md.optionalString('general.architecture') ?? '';
  const set = (text: string, bit: number, on: boolean) => {
    const id = ids.get(text);
    if (id !== undefined) attrs[id] = on ? attrs[id] | bit : attrs[id] & ~bit;
  };
  const has = (s: string, parts: string[]) => parts.some((p) => s.includes(p));
  if (has(pre, ['jina-v2-de', 'jina-v2-es', 'jina-v2-code']) || has(arch, ['nomic-bert-moe', 'jina-bert-v3'])) {
    set('<mask>', Attr.LSTRIP, true);
  } else if (has(name, ['phi-3', 'phi3'])) {
    for (const id of specials) attrs[id] |= Attr.RSTRIP;
    set('</s>', Attr.RSTRIP, true);
    for (const t of ['<unk>', '<s>', '<|endoftext|>']) set(t, Attr.RSTRIP, false);
  } else if (name.includes('modern-bert')) {
    set('[MASK]', Attr.LSTRIP, true);
  }
}
