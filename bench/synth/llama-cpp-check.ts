/**
 * Loads a GGUF in llama.cpp (node-llama-cpp's prebuilt CPU build), tokenizes a prompt and evaluates a few tokens:
 * proof that a synthesized file is one the reference implementation accepts and runs with finite activations.
 *   npx tsx bench/synth/llama-cpp-check.ts <file.gguf>
 */
import { pathToFileURL } from 'node:url';
import { getLlama } from 'node-llama-cpp';

export interface LlamaCppCheck {
  promptTokens: number[];
  /** Detokenized prompt: a byte-level vocabulary must give the prompt back exactly. */
  roundTrip: string;
  generated: number[];
  /** Probability llama.cpp gave each greedy token: finite only if the activations were. */
  confidences: number[];
  loadMs: number;
  evalMs: number;
}

export async function checkWithLlamaCpp(modelPath: string, prompt = 'Hello world, the quick brown fox.\nNew line 123 ☃', steps = 4): Promise<LlamaCppCheck> {
  const t0 = performance.now();
  // threads: 1 because two threads contend badly on the 2-core machines this runs on.
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' as never });
  try {
    const model = await llama.loadModel({ modelPath });
    try {
      const ctx = await model.createContext({ threads: 1, contextSize: 256 });
      const loadMs = performance.now() - t0;
      try {
        const promptTokens = Array.from(model.tokenize(prompt)) as number[];
        const t1 = performance.now();
        const generated: number[] = [];
        const confidences: number[] = [];
        const seq = ctx.getSequence();
        for await (const out of seq.evaluateWithMetadata(promptTokens as never, { confidence: true }, { temperature: 0 })) {
          generated.push(out.token as number);
          confidences.push(out.confidence);
          if (generated.length >= steps) break;
        }
        return {
          promptTokens,
          roundTrip: model.detokenize(promptTokens as never),
          generated,
          confidences,
          loadMs,
          evalMs: performance.now() - t1,
        };
      } finally {
        await ctx.dispose();
      }
    } finally {
      await model.dispose();
    }
  } finally {
    await llama.dispose();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const path = process.argv[2];
  if (!path) {
    process.stderr.write('usage: npx tsx bench/synth/llama-cpp-check.ts <file.gguf>\n');
    process.exit(2);
  }
  const r = await checkWithLlamaCpp(path);
  process.stdout.write(`${JSON.stringify(r)}\n`);
}
