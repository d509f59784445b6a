/**
 * `npm run bench -- --model <path>`: our engine beside llama.cpp on the same GGUF file, machine and token
 * ids. Prints a table and writes JSON under bench/results/. `--synth <preset>` benchmarks a synthesized
 * model of a real model's shapes (random weights), so real sizes need no download.
 */
import { Command } from 'commander';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, hostname, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseGguf } from '../engine/gguf/parse.ts';
import { FileSource } from '../engine/loader/file-source.ts';
import { createTokenizer } from '../engine/tokenizer/index.ts';
import { intOption } from '../cli/options.ts';
import { measureLlamaCpp } from './llama-peer.ts';
import { benchPrompt, type BenchSpec, type Measurement } from './measure.ts';
import { measureOurs } from './ours.ts';
import { formatTable } from './table.ts';

const program = new Command()
  .name('bench')
  .requiredOption('-m, --model <path>', 'GGUF model file')
  .option('-p, --prompt-tokens <n>', 'prompt length in tokens', intOption('--prompt-tokens', 1), 128)
  .option('-n, --gen-tokens <n>', 'tokens to generate', intOption('--gen-tokens', 2), 64)
  .option('-r, --runs <n>', 'timed runs per engine (median reported)', intOption('--runs', 1), 3)
  .option('-c, --concurrency <n>', 'also measure aggregate throughput of n sequences at once', intOption('--concurrency', 1, 64), 4)
  .option('--adapter <choice>', 'our WebGPU adapter: auto, gpu, swiftshader, llvmpipe')
  .option('--llama-gpu <kind>', 'llama.cpp backend: false (CPU), auto, cuda, vulkan', 'false')
  .option('--threads <n>', 'llama.cpp CPU threads', intOption('--threads', 1), 1)
  .option('--no-llama', 'skip llama.cpp')
  .option('--label <text>', 'machine label for the results file', hostname())
  .option('--out <dir>', 'results folder', 'bench/results')
  .parse();

const o = program.opts<{ model: string; promptTokens: number; genTokens: number; runs: number; concurrency: number; adapter?: string; llamaGpu: string; threads: number; llama: boolean; label: string; out: string }>();

const source = new FileSource(o.model);
const gguf = await parseGguf(source);
const tokenizer = createTokenizer(gguf.metadata);
await source.close();
const prompt = benchPrompt(tokenizer.vocabSize, tokenizer.addBos ? tokenizer.bos : undefined, o.promptTokens, (id) => tokenizer.isControl(id) || tokenizer.isEndOfGeneration(id));
const spec: BenchSpec = { model: o.model, prompt, genTokens: o.genTokens, runs: o.runs, concurrency: o.concurrency };

const results: Measurement[] = [];
process.stderr.write(`bench: ${o.model}, ${prompt.length} prompt tokens, ${o.genTokens} generated, ${o.runs} runs\n`);
results.push(await measureOurs(spec, o.adapter));
if (o.llama) {
  const gpu = o.llamaGpu === 'false' ? false : (o.llamaGpu as 'auto' | 'cuda' | 'vulkan');
  results.push(await measureLlamaCpp(spec, { gpu, threads: o.threads }));
}

const report = {
  date: new Date().toISOString(),
  machine: { label: o.label, cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30) },
  model: { path: o.model, name: gguf.metadata.optionalString('general.name'), architecture: gguf.metadata.optionalString('general.architecture'), bytes: gguf.fileSize },
  spec: { promptTokens: prompt.length, genTokens: o.genTokens, runs: o.runs, concurrency: o.concurrency },
  results,
};
process.stdout.write(formatTable(report.results) + '\n');
mkdirSync(o.out, { recursive: true });
const file = join(o.out, `${report.date.slice(0, 10)}-${o.label}-${o.model.split('/').pop()!.replace(/\.gguf$/, '')}.json`.replace(/[^A-Za-z0-9._/-]/g, '_'));
writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
process.stderr.write(`bench: wrote ${file}\n`);
process.exit(0);
