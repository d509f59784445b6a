/**
 * `npm run bench -- --model <path>`: our engine beside llama.cpp on the same GGUF file, machine and token
 * ids. Prints a table and writes JSON under bench/results/. `--synth <preset>` benchmarks a synthesized
 * model of a real model's shapes (random weights), so real sizes need no download. `--limits` first
 * measures what each adapter itself can do (with or without a model), so the engine's figures can be
 * read as a share of that.
 */
import { Command } from 'commander';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, hostname, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseGguf } from '../engine/gguf/parse.ts';
import { FileSource } from '../engine/loader/file-source.ts';
import { createTokenizer } from '../engine/tokenizer/index.ts';
import { intOption } from '../cli/options.ts';
import { measureLlamaCurve, openLlamaCpp } from './llama-peer.ts';
import { measurePaired } from './paired.ts';
import { benchPrompt, type BenchSpec, type Measurement } from './measure.ts';
import { efficiency, weightTraffic } from './efficiency.ts';
import { limitsChoices, measureLimits, type LimitsRun } from './limits.ts';
import { formatLimitsTable } from './limits-table.ts';
import { measureOurs, measureOursCurve, openOurs } from './ours.ts';
import { parseCurve, type EngineCurve } from './curve.ts';
import { formatCurveTable } from './curve-table.ts';
import { formatTable } from './table.ts';
import { loadEngine } from '../engine/node.ts';
import { llamaPrefixScenario } from './llama-prefix-scenario.ts';
import { formatPrefixScenario, prefixScenario, scenarioPrompts, type PrefixScenarioResult } from './prefix-scenario.ts';
import { formatTrainScenario, trainScenario, type TrainScenarioResult } from './train-scenario.ts';
import { formatProfile, profileOurs, type BenchProfile } from './profile.ts';

const program = new Command()
  .name('bench')
  .option('-m, --model <path>', 'GGUF model file (optional with --limits)')
  .option('--limits', "measure each adapter's streaming read, FMA throughput and dispatch cost first")
  .option('-p, --prompt-tokens <n>', 'prompt length in tokens', intOption('--prompt-tokens', 1), 128)
  .option('-n, --gen-tokens <n>', 'tokens to generate', intOption('--gen-tokens', 2), 64)
  .option('-r, --runs <n>', 'timed runs per engine (median reported)', intOption('--runs', 1), 3)
  .option('-c, --concurrency <n>', 'also measure aggregate throughput of n sequences at once, prefill included (1 = skip)', intOption('--concurrency', 1, 64), 4)
  .option('--curve [list]', 'batching curve: prefill and decode tok/s apart for each number of concurrent sequences (default 1,4,8,16)', parseCurve)
  .option('--adapter <choice>', 'our WebGPU adapter: auto, gpu, swiftshader, llvmpipe')
  .option('--llama-gpu <kind>', 'llama.cpp backend: false (CPU), auto, cuda, vulkan', 'false')
  .option('--threads <n>', 'llama.cpp CPU threads', intOption('--threads', 1), 1)
  .option('--no-llama', 'skip llama.cpp')
  .option('--label <text>', 'machine label for the results file', hostname())
  .option('--note <text>', 'free text stored with the machine in the results (e.g. which llama.cpp backend a GPU host could load)')
  .option('--out <dir>', 'results folder', 'bench/results')
  .option('--prefix-scenario', 'also time 16 requests sharing one system prompt with the prefix cache off and on (bench/prefix-scenario.ts)')
  .option('--train', 'also time LoRA fine-tuning on the model: rank 8, all seven block matrices (bench/train-scenario.ts)')
  .option('--profile', "also time our prefill and decode steps kernel by kernel (GPU timestamps where the adapter has them; bench/profile.ts)")
  .parse();

const o = program.opts<{ model?: string; limits?: boolean; promptTokens: number; genTokens: number; runs: number; concurrency: number; adapter?: string; llamaGpu: string; threads: number; llama: boolean; label: string; out: string; curve?: number[] | true; note?: string }>();
// Commander passes `true` for a bare --curve without calling the parser.
const curve = o.curve === true ? parseCurve(true) : o.curve;

if (!o.model && !o.limits) program.error('bench: give --model <path>, --limits, or both');

const machine = { label: o.label, cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30), ...(o.note ? { note: o.note } : {}) };
const date = new Date().toISOString();
mkdirSync(o.out, { recursive: true });

let limits: LimitsRun | undefined;
if (o.limits) {
  limits = await measureLimits(limitsChoices(o.adapter), {}, (line) => process.stderr.write(line + '\n'));
  process.stdout.write(formatLimitsTable(limits.measured) + '\n');
  if (!o.model) {
    writeReport(`${date.slice(0, 10)}-${o.label}-limits.json`, { date, machine, limits });
    process.exit(0);
  }
}
const model = o.model!;

const source = new FileSource(model);
const gguf = await parseGguf(source);
const tokenizer = createTokenizer(gguf.metadata);
await source.close();
const prompt = benchPrompt(tokenizer.vocabSize, tokenizer.addBos ? tokenizer.bos : undefined, o.promptTokens, (id) => tokenizer.isControl(id) || tokenizer.isEndOfGeneration(id));
const spec: BenchSpec = { model, prompt, genTokens: o.genTokens, runs: o.runs, concurrency: o.concurrency };

const results: Measurement[] = [];
process.stderr.write(`bench: ${model}, ${prompt.length} prompt tokens, ${o.genTokens} generated, ${o.runs} runs\n`);
if (o.llama) {
  // Alternated run by run (bench/paired.ts), so both see the same phase of a drifting machine.
  const gpu = o.llamaGpu === 'false' ? false : (o.llamaGpu as 'auto' | 'cuda' | 'vulkan');
  results.push(...(await measurePaired(() => openOurs(spec, o.adapter), () => openLlamaCpp(spec, { gpu, threads: o.threads }), o.runs)));
} else {
  results.push(await measureOurs(spec, o.adapter));
}
const curves: EngineCurve[] = [];
if (curve) {
  process.stderr.write(`bench: batching curve for ${curve.join(', ')} sequences, ${prompt.length} prompt tokens each, ${o.genTokens} decode tokens each\n`);
  curves.push(await measureOursCurve(spec, curve, o.adapter));
  if (o.llama) curves.push(await measureLlamaCurve(spec, curve, { gpu: o.llamaGpu === 'false' ? false : (o.llamaGpu as 'auto' | 'cuda' | 'vulkan'), threads: o.threads }));
}
let prefix: PrefixScenarioResult | undefined;
let prefixLlama: PrefixScenarioResult | undefined;
if (program.opts<{ prefixScenario?: boolean }>().prefixScenario) {
  process.stderr.write(`bench: prefix scenario, 16 requests sharing one system prompt, prefix cache off then on\n`);
  const engine = await loadEngine({ model, adapter: o.adapter, contextLength: 1024 });
  let promptTokens: number[][] = [];
  try {
    prefix = await prefixScenario(engine, { genTokens: o.genTokens });
    promptTokens = scenarioPrompts(engine, {}).prompts.map((p) => engine.tokenizer.encode(p));
  } finally {
    await engine.dispose();
  }
  if (o.llama) {
    process.stderr.write(`bench: prefix scenario on llama.cpp, the same token ids, prompt reuse off then on\n`);
    prefixLlama = await llamaPrefixScenario(model, promptTokens, o.genTokens, { gpu: o.llamaGpu === 'false' ? false : (o.llamaGpu as 'auto' | 'cuda' | 'vulkan'), threads: o.threads }, { systemPromptTokens: prefix.systemPromptTokens });
  }
}
let train: TrainScenarioResult | undefined;
if (program.opts<{ train?: boolean }>().train) {
  process.stderr.write(`bench: LoRA training scenario\n`);
  const engine = await loadEngine({ model, adapter: o.adapter, contextLength: 512 });
  try {
    train = await trainScenario(engine);
  } finally {
    await engine.dispose();
  }
}
let profile: BenchProfile | undefined;
if (program.opts<{ profile?: boolean }>().profile) {
  process.stderr.write(`bench: profile of our prefill and decode steps, kernel by kernel\n`);
  profile = await profileOurs(spec, o.adapter);
}
// Percentages only where the same run probed the adapter the engine used (its backend is the choice name).
const traffic = weightTraffic(gguf.tensors);
for (const r of results) r.efficiency = efficiency(r, traffic, limits?.measured.find((l) => l.adapter === r.backend));

const report = {
  date,
  machine,
  model: { path: model, name: gguf.metadata.optionalString('general.name'), architecture: gguf.metadata.optionalString('general.architecture'), bytes: gguf.fileSize, weightBytesPerToken: traffic.bytes, weightParams: traffic.params },
  spec: { promptTokens: prompt.length, genTokens: o.genTokens, runs: o.runs, concurrency: o.concurrency },
  results,
  ...(curves.length > 0 ? { curve: { sequences: curve, decodeTokensPerSequence: o.genTokens, engines: curves } } : {}),
  ...(limits ? { limits } : {}),
  ...(prefix ? { prefixScenario: prefix } : {}),
  ...(prefixLlama ? { prefixScenarioLlamaCpp: prefixLlama } : {}),
  ...(train ? { trainScenario: train } : {}),
  ...(profile ? { profile } : {}),
};
process.stdout.write(formatTable(report.results) + '\n');
if (curves.length > 0) process.stdout.write('\nBatching curve (prefill and decode timed apart; bench/curve.ts):\n' + formatCurveTable(curves) + '\n');
if (prefix) process.stdout.write('\n' + formatPrefixScenario(prefix, prefixLlama) + '\n');
if (train) process.stdout.write('\n' + formatTrainScenario(train) + '\n');
if (profile) process.stdout.write('\n' + formatProfile(profile) + '\n');
writeReport(`${date.slice(0, 10)}-${o.label}-${model.split('/').pop()!.replace(/\.gguf$/, '')}.json`, report);
process.exit(0);

function writeReport(name: string, report: unknown): void {
  const file = join(o.out, name.replace(/[^A-Za-z0-9._/-]/g, '_'));
  writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
  process.stderr.write(`bench: wrote ${file}\n`);
}
