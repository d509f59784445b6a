/**
 * `bench --prefix-scenario`: what the prefix cache saves on the traffic it is for. 16 requests share one
 * specialist-like system prompt (a few hundred tokens) and differ in the user's text; they run with the
 * cache off and then on (cold at the start of each pass), and for each pass we report time to first
 * token (median, p90), the prompt tokens prefill computed and those the cache served, and whether the
 * greedy outputs of the two passes are the same.
 */
import type { WebGpuEngine } from '../engine/engine.ts';
import type { GenerationResult } from '../engine/types.ts';
import { median } from './measure.ts';

export interface PrefixScenarioOptions {
  /** Requests per pass (default 16). */
  requests?: number;
  /** Requests in flight at once (default 1: each request is sent when the previous one ends). */
  concurrency?: number;
  /** Completion tokens per request (greedy, no early stop). */
  genTokens: number;
  /** Tokens of the system prompt, about (default 320). */
  systemTokens?: number;
}

export interface PrefixPass {
  prefixCache: boolean;
  timeToFirstTokenMedianMs: number;
  timeToFirstTokenP90Ms: number;
  /** Prompt tokens prefill computed, all requests together. */
  prefillTokens: number;
  /** Prompt tokens the prefix cache served, all requests together. */
  cachedPromptTokens: number;
  wallMs: number;
}

export interface PrefixScenarioResult {
  requests: number;
  concurrency: number;
  systemPromptTokens: number;
  promptTokens: number;
  genTokens: number;
  passes: PrefixPass[];
  /** Greedy completions equal request by request with the cache on and off. */
  sameOutputs: boolean;
}

const RULES = [
  'You are the support desk assistant of a small online shop that sells books, board games and puzzles.',
  'Answer in at most three short sentences, in plain words, and never invent an order number, a price or a date.',
  'When the customer asks where an order is, ask for the order number unless the message already gives it.',
  'When the customer wants to return an item, say that returns are free within thirty days and explain the steps.',
  'When an item arrived damaged, apologise once, offer a replacement or a refund, and ask for a photo of the damage.',
  'Classify the message first as one of: order status, return, damaged item, payment, account, other.',
  'If the message is rude, stay calm and polite; if it threatens anyone, answer only that a person will reply.',
  'Do not discuss other shops, politics or the weather, and do not give legal, medical or financial advice.',
];
const EXAMPLES = [
  ['My puzzle box was crushed when it came.', 'Damaged item. I am sorry the box arrived crushed. Please send a photo and we will send a new one or refund you.'],
  ['Where is my order 4417?', 'Order status. Order 4417 left our warehouse and is on its way. You will get a tracking email today.'],
  ['Can I send back a game my son already has?', 'Return. Yes: returns are free within thirty days. Print the label from your account and drop the parcel at any post office.'],
];
const USERS = [
  'Hi, I ordered a chess set last week and it still has not arrived. What can I do?',
  'The corner of my new atlas is bent. Can I get another one?',
  'I paid twice for the same order by mistake, please help.',
  'How do I change the email address on my account?',
  'Do you sell jigsaw puzzles with more than two thousand pieces?',
  'My card was declined but the money left my bank account.',
  'I want to return a cookbook I bought as a gift.',
  'The dice in my board game are missing. The box was sealed.',
  'Can you deliver to an island in the north of Scotland?',
  'Why is my order 5821 still marked as processing after a week?',
  'I forgot my password and the reset email never comes.',
  'The book I received is in German but I ordered it in English.',
  'Is it possible to wrap an order as a present?',
  'My parcel says delivered but nothing is at my door.',
  'Can I cancel an order I placed ten minutes ago?',
  'Two pages of my novel are printed upside down. Funny, but I want a good copy.',
];

/** The rules and examples, cut at a word (or repeated) so that the prompt is about `tokens` tokens long. */
function systemPrompt(engine: WebGpuEngine, tokens: number): string {
  const base = RULES.join(' ') + '\n\nExamples:\n' + EXAMPLES.map(([q, a]) => `Customer: ${q}\nAssistant: ${a}`).join('\n');
  const words = Array.from({ length: 8 }, (_, i) => (i === 0 ? base : `\nReminder ${i}: ${RULES.join(' ')}`)).join('').split(' ');
  const count = (n: number) => engine.tokenizer.encode(words.slice(0, n).join(' ')).length;
  // The fewest words that reach `tokens` tokens (all of them if none do).
  let lo = 1;
  let hi = words.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (count(mid) >= tokens) hi = mid;
    else lo = mid + 1;
  }
  return words.slice(0, lo).join(' ') + '\n\n';
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

/** The scenario's prompts: one system prompt of about `systemTokens` tokens, then each user's text. */
export function scenarioPrompts(engine: WebGpuEngine, opts: Pick<PrefixScenarioOptions, 'requests' | 'systemTokens'>): { system: string; prompts: string[] } {
  const n = opts.requests ?? 16;
  const system = systemPrompt(engine, opts.systemTokens ?? 320);
  return { system, prompts: Array.from({ length: n }, (_, i) => `${system}Customer: ${USERS[i % USERS.length]}${i >= USERS.length ? ` (${i})` : ''}\nAssistant:`) };
}

/** Run the scenario on a loaded engine; leaves the engine's prefix cache on (and cold) afterwards. */
export async function prefixScenario(engine: WebGpuEngine, opts: PrefixScenarioOptions): Promise<PrefixScenarioResult> {
  const n = opts.requests ?? 16;
  const concurrency = Math.max(1, opts.concurrency ?? 1);
  const { system, prompts } = scenarioPrompts(engine, opts);
  const maxPrompt = Math.max(...prompts.map((p) => engine.tokenizer.encode(p).length));
  if (maxPrompt + opts.genTokens > engine.info.contextLength) throw new Error(`prefix scenario: prompts of ${maxPrompt} tokens and ${opts.genTokens} generated exceed the context (${engine.info.contextLength})`);
  const generate = (prompt: string) => engine.generate({ prompt, maxTokens: opts.genTokens, temperature: 0, stopAtEndOfGeneration: false }).result;

  // Warm-up (pipelines compiled for every step shape we use), then a cold cache for each pass.
  engine.setPrefixCache(false);
  await generate(`Warm-up. ${USERS[0]}`);
  const passes: PrefixPass[] = [];
  const outputs: number[][][] = [];
  for (const on of [false, true]) {
    engine.setPrefixCache(false);
    engine.setPrefixCache(on);
    const results: GenerationResult[] = new Array(n);
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: Math.min(concurrency, n) }, async () => {
        while (next < n) {
          const i = next++;
          results[i] = await generate(prompts[i]);
        }
      }),
    );
    passes.push(passSummary(on, results.map((r) => ({ ttft: r.timings.timeToFirstTokenMs, computed: r.timings.prefillTokens, cached: r.timings.cachedPromptTokens })), performance.now() - t0));
    outputs.push(results.map((r) => r.tokens));
  }
  engine.setPrefixCache(false);
  engine.setPrefixCache(true);
  return {
    requests: n,
    concurrency,
    systemPromptTokens: engine.tokenizer.encode(system).length,
    promptTokens: maxPrompt,
    genTokens: opts.genTokens,
    passes,
    sameOutputs: sameOutputs(outputs[0], outputs[1]),
  };
}

/** One pass of the scenario from its requests' TTFT and prompt tokens computed and served from cache. */
export function passSummary(prefixCache: boolean, requests: { ttft: number; computed: number; cached: number }[], wallMs: number): PrefixPass {
  const ttft = requests.map((r) => r.ttft);
  return {
    prefixCache,
    timeToFirstTokenMedianMs: round(median(ttft)),
    timeToFirstTokenP90Ms: round(percentile(ttft, 90)),
    prefillTokens: requests.reduce((s, r) => s + r.computed, 0),
    cachedPromptTokens: requests.reduce((s, r) => s + r.cached, 0),
    wallMs: round(wallMs),
  };
}

/** Whether two passes' completions are equal request by request. */
export function sameOutputs(a: number[][], b: number[][]): boolean {
  return a.every((t, i) => JSON.stringify(t) === JSON.stringify(b[i]));
}

/** A few lines for the terminal: ours, and llama.cpp's passes where the run measured them. */
export function formatPrefixScenario(r: PrefixScenarioResult, llama?: PrefixScenarioResult): string {
  const row = (engine: string, p: PrefixPass) =>
    `| ${engine} | ${p.prefixCache ? 'on' : 'off'} | ${p.timeToFirstTokenMedianMs.toFixed(0)} | ${p.timeToFirstTokenP90Ms.toFixed(0)} | ${p.prefillTokens} | ${p.cachedPromptTokens} | ${(p.wallMs / 1000).toFixed(1)} |`;
  const lines = [
    `Prefix scenario: ${r.requests} requests (${r.concurrency} at a time), one system prompt of ${r.systemPromptTokens} tokens, prompts up to ${r.promptTokens} tokens, ${r.genTokens} generated each`,
    '| engine | prefix cache | TTFT median ms | TTFT p90 ms | prefill tokens computed | cached prompt tokens | wall s |',
    '|---|---|---|---|---|---|---|',
    ...r.passes.map((p) => row('svc', p)),
    ...(llama?.passes ?? []).map((p) => row('llama.cpp', p)),
    `Greedy outputs the same with the cache on and off: svc ${r.sameOutputs ? 'yes' : 'NO'}${llama ? `, llama.cpp ${llama.sameOutputs ? 'yes' : 'NO'}` : ''}`,
  ];
  return lines.join('\n');
}

function round(x: number): number {
  return Math.round(x * 10) / 10;
}
