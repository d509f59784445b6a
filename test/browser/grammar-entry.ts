/** Page side of the browser grammar-worker test: a sandbox Worker under budgets, matchers on the page. */
import { IsolatedGrammars } from '../../engine/grammar/isolated/isolated-grammars.ts';
import { browserGrammarWorkers } from '../../engine/grammar/isolated/spawn-browser.ts';
import { longestPause } from '../helpers/longest-pause.ts';

const enc = new TextEncoder();
const texts = ['{', '}', '"', 'a', ':', ' ', ',', '1', 'b', 'c', ''];
const EOS = texts.length - 1;
const tokenizer = {
  vocabSize: texts.length,
  tokenBytes: (i: number) => enc.encode(texts[i]),
  tokenText: (i: number) => texts[i] || '</s>',
  isEndOfGeneration: (i: number) => i === EOS,
  isControl: (i: number) => i === EOS,
};

declare global {
  interface Window {
    svcGrammarWorkers(): Promise<{ slowError: string; slowMs: number; gap: number; tickRatio: number; json: string; crossOriginIsolated: boolean }>;
  }
}

window.svcGrammarWorkers = async () => {
  const grammars = new IsolatedGrammars(tokenizer, browserGrammarWorkers('/grammar-worker.js'), { serving: 'in-process', compileTimeoutMs: 1500 });
  await grammars.warm();
  const t0 = performance.now();
  const { gap, tickRatio, result } = await longestPause(() =>
    grammars.compile({ type: 'json_schema', schema: { type: 'object', properties: { x: { type: 'string', pattern: '^((a|b){1,200}c){1,200}$' } } } }),
  );
  const slowMs = performance.now() - t0;
  const slowError = result.status === 'rejected' ? (result.reason as Error).message : '';
  const g = await grammars.compile({ type: 'json_object' });
  const c = await g.createConstraint({ maxTokens: 30 });
  let json = '';
  let r = 7;
  while (!c.isDone()) {
    const m = c.mask()!;
    const ok: number[] = [];
    for (let i = 0; i < texts.length; i++) if (m[0] & (1 << i)) ok.push(i);
    r = (r * 1103515245 + 12345) >>> 0;
    const t = ok[r % ok.length];
    c.accept(t);
    json += texts[t];
  }
  c.dispose();
  grammars.dispose();
  return { slowError, slowMs, gap, tickRatio, json, crossOriginIsolated: globalThis.crossOriginIsolated === true };
};
