/** `svc generate`: stream a completion of a prompt to stdout; loading progress and stats go to stderr. */
import type { Command } from 'commander';
import { createProgressBar } from '../../engine/loader/progress-bar-node.ts';
import { choiceOption, floatOption, intOption, NODE_ADAPTERS } from '../options.ts';

export function registerGenerate(program: Command): void {
  program
    .command('generate')
    .description('generate a continuation of <prompt> and stream it to stdout')
    .argument('<prompt>', 'text to continue')
    .requiredOption('-m, --model <path-or-url>', 'GGUF model file or https:// URL (downloaded once into the cache)')
    .option('-n, --max-tokens <n>', 'most tokens to generate', intOption('--max-tokens', 1), 256)
    .option('-t, --temperature <t>', '0 = greedy', floatOption('--temperature', 0, 100), 0)
    .option('--top-p <p>', 'nucleus sampling mass in (0, 1]', floatOption('--top-p', 0, 1), 1)
    .option('--top-k <k>', 'sample among the k most likely tokens (0 = all)', intOption('--top-k', 0), 0)
    .option('-s, --seed <n>', 'seed for reproducible sampling', intOption('--seed', 0))
    // One string per --stop: a variadic option would take the prompt after it for another stop string.
    .option('--stop <text>', 'stop before this string in the generated text (repeat for more)', (v: string, prev: string[] = []) => [...prev, v])
    .option('--repetition-penalty <r>', 'llama.cpp-style repetition penalty (1 = off)', floatOption('--repetition-penalty', 0, 10), 1)
    .option('--adapter <choice>', 'WebGPU adapter: auto, gpu, swiftshader, llvmpipe (env SVC_ADAPTER)', choiceOption('--adapter', NODE_ADAPTERS))
    .option('--context <n>', 'context window to run with', intOption('--context', 2))
    .option('-v, --verbose', 'print timings to stderr')
    .action(async (prompt: string, o: { model: string; maxTokens: number; temperature: number; topP: number; topK: number; seed?: number; stop?: string[]; repetitionPenalty: number; adapter?: string; context?: number; verbose?: boolean }) => {
      // Loaded on use, so commands that need no engine start without it.
      const { loadEngine } = await import('../../engine/node.ts');
      const download = createProgressBar('downloading model');
      const weights = createProgressBar('loading weights');
      const engine = await loadEngine({
        model: o.model,
        adapter: o.adapter,
        contextLength: o.context,
        onDownloadProgress: (done, total) => download.update(done, total),
        onProgress: (done, total) => weights.update(done, total),
      });
      weights.finish();
      try {
        const controller = new AbortController();
        process.once('SIGINT', () => controller.abort());
        const gen = engine.generate({
          prompt,
          maxTokens: o.maxTokens,
          temperature: o.temperature,
          topP: o.topP,
          topK: o.topK,
          seed: o.seed,
          stop: o.stop,
          repetitionPenalty: o.repetitionPenalty,
          signal: controller.signal,
        });
        for await (const chunk of gen) if (chunk.text) process.stdout.write(chunk.text);
        const r = await gen.result;
        process.stdout.write('\n');
        if (o.verbose) {
          const t = r.timings;
          process.stderr.write(
            `${r.promptTokens} prompt tokens, ${r.completionTokens} generated (${r.stoppedBy}); ` +
              `prefill ${t.prefillTokensPerSecond.toFixed(1)} tok/s, decode ${t.decodeTokensPerSecond.toFixed(1)} tok/s, first token after ${t.timeToFirstTokenMs.toFixed(0)} ms\n`,
          );
        }
      } finally {
        await engine.dispose();
      }
    });
}
