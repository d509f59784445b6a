/**
 * Greedy answers of a base model with (or without) a LoRA adapter file, for the fine-tuning evidence:
 * through llama.cpp (node-llama-cpp's LoRA option), which also proves llama.cpp loads our adapter files,
 * and through our engine's serving path (engine.loadAdapter + generate({ adapter })).
 */
import { getLlama, LlamaLogLevel, type Llama } from 'node-llama-cpp';
import type { Tokenizer } from '../../engine/tokenizer/types.ts';
import type { WebGpuEngine } from '../../engine/engine.ts';

export interface AdapterGeneration {
  modelPath: string;
  /** A GGUF LoRA adapter file; undefined for the base model. */
  adapterPath?: string;
  /** Prompt token ids, as serving renders and tokenizes them. */
  prompts: readonly (readonly number[])[];
  maxTokens: number;
  /** Stop strings, as serving applies them: the answer ends before the first. */
  stop: readonly string[];
  /** The model's tokenizer, to decode as serving does. */
  tokenizer: Tokenizer;
}

export interface AdapterAnswer {
  text: string;
  /** Why it ended: an end-of-generation token, a stop string, or the token limit. */
  stoppedBy: 'eog' | 'stop' | 'length';
}

let llama: Promise<Llama> | undefined;

export async function generateWithAdapter(g: AdapterGeneration): Promise<AdapterAnswer[]> {
  llama ??= getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const model = await (await llama).loadModel({ modelPath: g.modelPath });
  try {
    const context = await model.createContext({ threads: 1, contextSize: 512, ...(g.adapterPath ? { lora: { adapters: [{ filePath: g.adapterPath }] } } : {}) });
    try {
      const answers: AdapterAnswer[] = [];
      for (const prompt of g.prompts) {
        const seq = context.getSequence();
        const out: number[] = [];
        let answer: AdapterAnswer = { text: '', stoppedBy: 'length' };
        // yieldEogToken: node-llama-cpp otherwise goes on sampling past an end-of-generation token.
        for await (const token of seq.evaluate([...prompt] as never, { temperature: 0, yieldEogToken: true })) {
          if (g.tokenizer.isEndOfGeneration(Number(token))) {
            answer = { text: g.tokenizer.decode(out), stoppedBy: 'eog' };
            break;
          }
          out.push(Number(token));
          const text = g.tokenizer.decode(out);
          const at = Math.min(...g.stop.map((s) => text.indexOf(s)).filter((i) => i >= 0));
          if (Number.isFinite(at)) {
            answer = { text: text.slice(0, at), stoppedBy: 'stop' };
            break;
          }
          answer = { text, stoppedBy: 'length' };
          if (out.length >= g.maxTokens) break;
        }
        seq.dispose();
        answers.push(answer);
      }
      return answers;
    } finally {
      await context.dispose();
    }
  } finally {
    await model.dispose();
  }
}

export async function disposeLlama(): Promise<void> {
  const l = llama;
  llama = undefined;
  await (await l)?.dispose();
}

/** The same answers through our engine: the adapter loaded from the file's bytes, greedy, serving's stop strings. */
export async function generateWithEngineAdapter(engine: WebGpuEngine, adapter: Uint8Array | undefined, g: Pick<AdapterGeneration, 'prompts' | 'maxTokens' | 'stop'>): Promise<AdapterAnswer[]> {
  const handle = adapter ? await engine.loadAdapter(adapter, { name: 'evidence' }) : undefined;
  try {
    const answers: AdapterAnswer[] = [];
    for (const prompt of g.prompts) {
      const r = await engine.generate({ tokens: [...prompt], maxTokens: g.maxTokens, temperature: 0, stop: g.stop, ...(handle ? { adapter: handle.id } : {}) }).result;
      answers.push({ text: r.text, stoppedBy: r.stoppedBy === 'end-of-generation' ? 'eog' : r.stoppedBy === 'stop-sequence' ? 'stop' : 'length' });
    }
    return answers;
  } finally {
    if (handle) await engine.unloadAdapter(handle.id);
  }
}
