/**
 * llama.cpp (node-llama-cpp, CPU) as the oracle for a model file: its greedy continuation of token-id
 * prompts with the next-token distribution before each token, and how far our engine's distributions
 * along that path are from it. The tests' oracle, and the GPU host's parity check (bench/gpu/check.ts).
 */
import type { Llama } from 'node-llama-cpp';
import type { WebGpuEngine } from '../engine/engine.ts';

export interface LlamaCppReference {
  prompt: number[];
  greedy: number[];
  /** llama.cpp's next-token probabilities before each greedy token. */
  probs: Float64Array[];
}


/**
 * llama.cpp's greedy continuation and distributions, without flash attention, with its KV cache in `kv`:
 * 'F32' by default, whose attention is the engine's f32 cache's; 'F16' (llama.cpp's own default) rounds
 * K and V as the engine's f16 cache does (kernels/kv-format.ts), and also q and the attention weights.
 * One CPU thread unless `threads` says otherwise (the tests share a small machine).
 */
export async function llamaCppReference(llama: Llama, path: string, prompts: number[][], vocab: number, steps: number, kv: 'F32' | 'F16' = 'F32', threads = 1): Promise<LlamaCppReference[]> {
  const model = await llama.loadModel({ modelPath: path });
  try {
    const context = await model.createContext({ threads, contextSize: 256, flashAttention: false, experimentalKvCacheKeyType: kv, experimentalKvCacheValueType: kv });
    try {
      const out: LlamaCppReference[] = [];
      for (const prompt of prompts) {
        const seq = context.getSequence();
        const greedy: number[] = [];
        const probs: Float64Array[] = [];
        for await (const o of seq.evaluateWithMetadata(prompt as never, { probabilities: true }, { temperature: 0 })) {
          greedy.push(Number(o.token));
          const p = new Float64Array(vocab);
          for (const [t, v] of o.probabilities) p[Number(t)] = v;
          probs.push(p);
          if (greedy.length >= steps) break;
        }
        seq.dispose();
        out.push({ prompt, greedy, probs });
      }
      return out;
    } finally {
      await context.dispose();
    }
  } finally {
    await model.dispose();
  }
}

export function softmax(logits: Float32Array): Float64Array {
  let max = -Infinity;
  for (const v of logits) max = Math.max(max, v);
  const p = Float64Array.from(logits, (v) => Math.exp(v - max));
  const sum = p.reduce((a, b) => a + b, 0);
  return p.map((v) => v / sum);
}

/** How far our next-token distributions along llama.cpp's greedy path are from its own. */
export interface PathDivergence {
  /** The largest difference of one token's probability. */
  prob: number;
  /**
   * The largest KL divergence of ours from llama.cpp's, in nats: unlike `prob`, it sees a wrong logit
   * where every probability is small (a random-weight model's near-uniform distributions).
   */
  kl: number;
}

/**
 * Our next-token distributions along llama.cpp's greedy path (teacher forcing) against its own; the path
 * in steps of `stepTokens` (WebGpuEngine.logits: default, the most a step samples).
 */
export async function pathDivergence(engine: WebGpuEngine, ref: LlamaCppReference, stepTokens?: number): Promise<PathDivergence> {
  return divergenceOf(await engine.logits([...ref.prompt, ...ref.greedy.slice(0, -1)], { stepTokens }), ref);
}

/** The divergence of the distributions of `logits` (after each token of the prompt and path) from `ref`'s. */
export function divergenceOf(logits: Float32Array[], ref: LlamaCppReference): PathDivergence {
  let prob = 0;
  let kl = 0;
  ref.probs.forEach((want, i) => {
    const got = softmax(logits[ref.prompt.length - 1 + i]);
    let d = 0;
    for (let t = 0; t < want.length; t++) {
      prob = Math.max(prob, Math.abs(got[t] - want[t]));
      if (want[t] > 0) d += want[t] * Math.log(want[t] / Math.max(got[t], 1e-300));
    }
    kl = Math.max(kl, d);
  });
  return { prob, kl };
}

/** The largest difference of a next-token probability from llama.cpp's along its greedy path (pathDivergence). */
export async function largestProbDifference(engine: WebGpuEngine, ref: LlamaCppReference, stepTokens?: number): Promise<number> {
  return (await pathDivergence(engine, ref, stepTokens)).prob;
}

/** log(p1 / p2) of llama.cpp's first and second choice before greedy token i: how near a tie it was. */
export function gapAt(ref: LlamaCppReference, i: number): number {
  const [a, b] = [...ref.probs[i]].sort((x, y) => y - x);
  return Math.log(a / b);
}

export function smallestGap(ref: LlamaCppReference): number {
  return Math.min(...ref.probs.map((_, i) => gapAt(ref, i)));
}
