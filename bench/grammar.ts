/**
 * Grammar costs on real vocabularies, without the model: xgrammar load, vocabulary hand-over, compile
 * time per grammar, and per token the mask (xgrammar's bitmask + our copy and UTF-8 guard) and accept.
 * Tokens are sampled uniformly from the mask: a worst case for strings (any byte may come next).
 * "with budget" is mask+accept when the constraint knows maxTokens (it plans a completion near the end);
 * "forced steps" is the share of steps whose token the grammar forces (what jump-forward would skip).
 *
 *   npx tsx bench/grammar.ts [tokens per run=200] [runs=5]
 */
import '../engine/grammar/xgrammar-node.ts';
import { parseGguf } from '../engine/gguf/parse.ts';
import { compileGrammar, grammarVocabulary, xgrammarRuntime, type GrammarSpec } from '../engine/grammar/index.ts';
import { FileSource } from '../engine/loader/file-source.ts';
import { createTokenizer, type Tokenizer } from '../engine/tokenizer/index.ts';

const MODELS = process.env.SVC_SHARED_MODELS ?? new URL('../../shared/models', import.meta.url).pathname;
const TOKENS = Number(process.argv[2] ?? 200);
const RUNS = Number(process.argv[3] ?? 5);

const SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 32 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    score: { type: 'number', minimum: 0, maximum: 5 },
    tags: { type: 'array', items: { enum: ['a', 'b', 'c'] }, minItems: 1, maxItems: 4 },
    address: { type: 'object', properties: { city: { type: 'string' }, zip: { type: 'string', pattern: '^[0-9]{5}$' } }, required: ['city'] },
  },
  required: ['name', 'age', 'tags'],
};
const TOOLS = [
  { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1, maximum: 14 } }, required: ['city'] } },
  { name: 'search', parameters: { type: 'object', properties: { query: { type: 'string' }, limit: { type: 'integer' } }, required: ['query'] } },
];
const SPECS: [string, GrammarSpec][] = [
  ['json_object', { type: 'json_object' }],
  ['json_schema', { type: 'json_schema', schema: SCHEMA }],
  ['tools/required', { type: 'tools', tools: TOOLS, choice: 'required' }],
  ['tools/auto', { type: 'tools', tools: TOOLS, choice: 'auto' }],
];

async function tokenizer(file: string): Promise<Tokenizer> {
  const src = new FileSource(`${MODELS}/${file}`);
  try {
    return createTokenizer((await parseGguf(src)).metadata);
  } finally {
    await src.close();
  }
}

function rng(seed: number): () => number {
  let s = seed;
  return () => ((s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32);
}

const fmt = (ms: number) => ms.toFixed(3).padStart(8);

const t0 = performance.now();
const rt = await xgrammarRuntime();
console.log(`xgrammar load + wasm start: ${rt.loadMs.toFixed(1)} ms (first call ${(performance.now() - t0).toFixed(1)} ms)`);
console.log(`tokens per run ${TOKENS}, runs ${RUNS}; per-token times are means over all sampled tokens\n`);
console.log('vocab   grammar          compile ms  mask ms/tok  accept ms/tok  mask+accept  with budget  forced steps');

for (const file of ['stories260K.gguf', 'llama-2-tiny-random.gguf']) {
  const t = await tokenizer(file);
  const v0 = performance.now();
  const vocab = await grammarVocabulary(t);
  console.log(`${t.vocabSize}: vocabulary handed to xgrammar in ${(performance.now() - v0).toFixed(1)} ms`);
  void vocab;
  for (const [label, spec] of SPECS) {
    const c0 = performance.now();
    const g = await compileGrammar(t, spec);
    const compileMs = performance.now() - c0;
    let maskMs = 0;
    let acceptMs = 0;
    let n = 0;
    let budgetMs = 0;
    let budgetN = 0;
    let forced = 0;
    for (let run = 0; run < RUNS; run++) {
      for (const withBudget of [false, true]) {
        const c = await g.createConstraint(withBudget ? { maxTokens: TOKENS } : {});
        const random = rng(run + 1);
        for (let i = 0; i < TOKENS; i++) {
          const a = performance.now();
          const m = c.mask();
          const b = performance.now();
          const allowed: number[] = [];
          for (let w = 0; w < m.length; w++) {
            let bits = m[w];
            while (bits !== 0) {
              const low = bits & -bits;
              allowed.push(w * 32 + 31 - Math.clz32(low));
              bits ^= low;
            }
          }
          if (allowed.length === 0) break;
          const tok = allowed[Math.floor(random() * allowed.length)];
          const d = performance.now();
          c.accept(tok);
          const e = performance.now();
          // isDone() computes the next mask (and the mask() above then returns it): mask time.
          const done = c.isDone();
          const f = performance.now();
          if (withBudget) {
            budgetMs += b - a + (f - d);
            budgetN++;
          } else {
            maskMs += b - a + (f - e);
            acceptMs += e - d;
            n++;
            // A step whose token the grammar forces: jump-forward would skip its sampling.
            if (!done && c.forcedTokens(1).length > 0) forced++;
          }
          if (done) break;
        }
        c.dispose();
      }
    }
    console.log(
      `${String(t.vocabSize).padEnd(7)} ${label.padEnd(16)} ${compileMs.toFixed(1).padStart(10)}  ${fmt(maskMs / n)}     ${fmt(acceptMs / n)}     ${fmt((maskMs + acceptMs) / n)}    ${fmt(budgetMs / budgetN)}  ${((100 * forced) / n).toFixed(0).padStart(8)}%`,
    );
  }
}
