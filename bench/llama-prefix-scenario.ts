/**
 * The prefix scenario (prefix-scenario.ts) on llama.cpp: the same prompt token ids, one after another on
 * one sequence of one context. "Off" clears the sequence before each request; "on" keeps it and, as
 * llama-server's prompt cache does, erases only the tokens after the longest common prefix with the new
 * prompt and evaluates the rest.
 */
import { getLlama, type Token } from 'node-llama-cpp';
import { passSummary, sameOutputs, type PrefixPass, type PrefixScenarioResult } from './prefix-scenario.ts';

export async function llamaPrefixScenario(modelPath: string, prompts: number[][], genTokens: number, opts: { gpu: false | 'cuda' | 'vulkan' | 'auto'; threads: number }, shape: { systemPromptTokens: number }): Promise<PrefixScenarioResult> {
  const llama = await getLlama({ gpu: opts.gpu, build: 'never', logLevel: 'error' as never });
  const model = await llama.loadModel({ modelPath, gpuLayers: opts.gpu === false ? 0 : 'max' });
  const maxPrompt = Math.max(...prompts.map((p) => p.length));
  const context = await model.createContext({ threads: opts.threads, contextSize: maxPrompt + genTokens + 8, batchSize: Math.max(512, maxPrompt) });
  const seq = context.getSequence();
  try {
    const run = async (prompt: number[], reuse: boolean) => {
      let common = 0;
      if (reuse) {
        const have = seq.contextTokens;
        // At least one prompt token is evaluated, so the first token has fresh logits.
        while (common < Math.min(have.length, prompt.length - 1) && have[common] === prompt[common]) common++;
        await seq.eraseContextTokenRanges([{ start: common, end: seq.nextTokenIndex }]);
      } else {
        await seq.clearHistory();
      }
      const start = performance.now();
      let first = 0;
      const tokens: number[] = [];
      for await (const t of seq.evaluate(prompt.slice(common) as Token[], { temperature: 0 })) {
        if (tokens.length === 0) first = performance.now();
        tokens.push(t);
        if (tokens.length >= genTokens) break;
      }
      return { ttft: first - start, computed: prompt.length - common, cached: common, tokens };
    };
    await run(prompts[0].slice(0, 8), false); // warm-up
    const passes: PrefixPass[] = [];
    const outputs: number[][][] = [];
    for (const reuse of [false, true]) {
      await seq.clearHistory();
      const t0 = performance.now();
      const rs = [];
      for (const p of prompts) rs.push(await run(p, reuse));
      passes.push(passSummary(reuse, rs, performance.now() - t0));
      outputs.push(rs.map((r) => r.tokens));
    }
    return {
      requests: prompts.length,
      concurrency: 1,
      systemPromptTokens: shape.systemPromptTokens,
      promptTokens: maxPrompt,
      genTokens,
      passes,
      sameOutputs: sameOutputs(outputs[0], outputs[1]),
    };
  } finally {
    seq.dispose();
    await context.dispose();
    await model.dispose();
  }
}
