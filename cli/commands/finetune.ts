/**
 * `svc finetune`: train a LoRA adapter for a GGUF model on a chat fine-tuning JSONL file, on WebGPU, and
 * write it in llama.cpp's adapter format. Every bad line of the data is reported, with its number, before
 * the model is even loaded; the adapter is written whole or not at all (temp file + rename).
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { LORA_TARGETS, type LoraTarget } from '../../engine/lora/adapter-file.ts';
import { createProgressBar } from '../../engine/loader/progress-bar-node.ts';
import { describeProblems, validateTrainingJsonl, type TrainingFileCheck } from '../../engine/train/data.ts';
import type { FineTuneSettings, TrainingFileProblem } from '../../engine/train/types.ts';
import { choiceOption, floatOption, intOption, NODE_ADAPTERS } from '../options.ts';
import { createTrainingProgress } from '../train-progress.ts';

/** The checkpoint's name inside --checkpoint-dir. */
export const CHECKPOINT_FILE = 'finetune.ckpt';
/** Longest conversation by default: enough for chat data, and bounded so one long line cannot take all GPU memory. */
const DEFAULT_MAX_TOKENS = 2048;

interface FinetuneOptions {
  model: string;
  data: string;
  out: string;
  validation?: string;
  rank: number;
  alpha: number;
  targets: LoraTarget[];
  epochs: number;
  lr: number;
  batch: number;
  seed: number;
  maxTokens?: number;
  checkpointDir?: string;
  checkpointEvery: number;
  resume?: boolean;
  adapter?: string;
}

export function parseTargets(value: string): LoraTarget[] {
  const names = value.split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '');
  const bad = names.filter((n) => !(LORA_TARGETS as readonly string[]).includes(n));
  if (names.length === 0 || bad.length > 0) throw new InvalidArgumentError(`--targets must be a comma-separated list of ${LORA_TARGETS.join(', ')}${bad.length ? ` (${bad.map((b) => JSON.stringify(b)).join(', ')} is not one)` : ''}`);
  return LORA_TARGETS.filter((t) => names.includes(t));
}

export function registerFinetune(program: Command): void {
  program
    .command('finetune')
    .description("train a LoRA adapter on a chat fine-tuning JSONL file ({\"messages\": [...]} per line) and write it in llama.cpp's GGUF adapter format")
    .requiredOption('-m, --model <path-or-url>', 'base GGUF model file or https:// URL')
    .requiredOption('-d, --data <train.jsonl>', 'training conversations, one {"messages": [...]} per line')
    .requiredOption('-o, --out <adapter.gguf>', 'where to write the adapter')
    .option('--validation <file.jsonl>', 'held-out conversations: their loss is printed after each epoch')
    .option('--rank <r>', 'LoRA rank', intOption('--rank', 1, 1024), 8)
    .option('--alpha <a>', 'LoRA alpha (the update is scaled by alpha / rank)', floatOption('--alpha', 0, 1e6), 16)
    .addOption(new Option('--targets <list>', `matrices to adapt, from ${LORA_TARGETS.join(',')}`).argParser(parseTargets).default([...LORA_TARGETS], 'all of them'))
    .option('--epochs <n>', 'passes over the training data', intOption('--epochs', 1, 10_000), 3)
    .option('--lr <rate>', 'peak learning rate (linear warm-up, then linear decay to 10%)', floatOption('--lr', 1e-9, 1), 1e-3)
    .option('--batch <n>', 'conversations per optimizer step', intOption('--batch', 1, 4096), 4)
    .option('--seed <n>', 'seed for the adapter initialisation and the shuffles', intOption('--seed', 0, 0xffffffff), 0)
    .option('--max-tokens <n>', `longest conversation in tokens, once rendered (default: the model's context, at most ${DEFAULT_MAX_TOKENS})`, intOption('--max-tokens', 2))
    .option('--checkpoint-dir <dir>', `save ${CHECKPOINT_FILE} here every --checkpoint-every steps and after each epoch`)
    .option('--checkpoint-every <n>', 'steps between checkpoints', intOption('--checkpoint-every', 1), 50)
    .option('--resume', 'continue from the checkpoint in --checkpoint-dir (same model, data and settings)')
    .option('--adapter <choice>', 'WebGPU adapter: auto, gpu, swiftshader, llvmpipe (env SVC_ADAPTER)', choiceOption('--adapter', NODE_ADAPTERS))
    .action(async (o: FinetuneOptions) => {
      // Everything that can be checked without the model is checked first: a bad file costs nothing.
      if (o.resume && !o.checkpointDir) throw new Error('--resume needs --checkpoint-dir (the folder holding the checkpoint)');
      const out = resolve(o.out);
      if (!existsSync(dirname(out)) || !statSync(dirname(out)).isDirectory()) throw new Error(`--out: the folder ${dirname(out)} does not exist`);
      const checkpointPath = o.checkpointDir ? join(resolve(o.checkpointDir), CHECKPOINT_FILE) : undefined;
      if (o.resume && !existsSync(checkpointPath!)) throw new Error(`--resume: there is no checkpoint at ${checkpointPath}`);
      const train = checkFile('--data', o.data);
      const validation = o.validation !== undefined ? checkFile('--validation', o.validation) : undefined;

      const { loadEngine } = await import('../../engine/node.ts');
      const { renderTrainingExamples } = await import('../../engine/train/render.ts');
      const { fineTune, FineTuneAbortedError } = await import('../../engine/train/fine-tune.ts');
      const weights = createProgressBar('loading weights');
      const engine = await loadEngine({ model: o.model, adapter: o.adapter, grammars: 'in-process', onProgress: (done, total) => weights.update(done, total) });
      weights.finish();
      try {
        const model = { tokenizer: engine.tokenizer, chatTemplate: engine.info.chatTemplate };
        const maxTokens = o.maxTokens ?? Math.min(engine.info.contextLength, DEFAULT_MAX_TOKENS);
        if (maxTokens > engine.info.contextLength) throw new Error(`--max-tokens ${maxTokens} is more than the model's context of ${engine.info.contextLength} tokens`);
        const trainSet = renderTrainingExamples(model, train.conversations, { maxTokens });
        refuseProblems('--data', o.data, trainSet.problems);
        const validationSet = validation ? renderTrainingExamples(model, validation.conversations, { maxTokens }) : undefined;
        if (validationSet) refuseProblems('--validation', o.validation!, validationSet.problems);

        const settings: FineTuneSettings = { lora: { rank: o.rank, alpha: o.alpha, targets: o.targets }, epochs: o.epochs, batchSize: o.batch, learningRate: o.lr, seed: o.seed };
        const stepsPerEpoch = Math.ceil(trainSet.examples.length / o.batch);
        process.stderr.write(
          `training ${o.targets.join(',')} at rank ${o.rank} on ${trainSet.examples.length} conversations` +
            `${validationSet ? ` (${validationSet.examples.length} for validation)` : ''}: ${o.epochs} epoch(s) of ${stepsPerEpoch} step(s)\n`,
        );
        if (checkpointPath) mkdirSync(dirname(checkpointPath), { recursive: true });
        const progress = createTrainingProgress();
        const controller = new AbortController();
        const onSigint = () => controller.abort();
        process.once('SIGINT', onSigint);
        let result;
        try {
          result = await fineTune(engine, trainSet.examples, validationSet?.examples, settings, {
            signal: controller.signal,
            onProgress: (p) => progress.update(p),
            onEpoch: (e) => progress.note(`epoch ${e.epoch}/${o.epochs}: train loss ${e.trainLoss.toFixed(4)}${e.validationLoss !== null ? `, validation loss ${e.validationLoss.toFixed(4)}` : ''}`),
            checkpoint: checkpointPath
              ? { every: o.checkpointEvery, save: async (state) => writeAtomically(checkpointPath, state), resumeFrom: o.resume ? new Uint8Array(readFileSync(checkpointPath)) : undefined }
              : undefined,
          });
        } catch (e) {
          progress.finish();
          if (e instanceof FineTuneAbortedError) {
            process.exitCode = 130;
            throw new Error(`${e.message}${checkpointPath ? `; --resume --checkpoint-dir ${o.checkpointDir} continues from there` : ''}`);
          }
          throw e;
        } finally {
          process.off('SIGINT', onSigint);
        }
        progress.finish();
        writeAtomically(out, result.adapter);
        const summary = {
          adapter: out,
          steps: result.steps,
          firstLoss: result.trainLoss[0],
          lastEpochLoss: mean(result.trainLoss.slice(-stepsPerEpoch)),
          validationLoss: result.validationLoss,
          trainedTokens: result.trainedTokens,
          totalTokens: result.totalTokens,
          wallMs: Math.round(result.wallMs),
        };
        process.stderr.write(`wrote ${out} (${result.adapter.byteLength} bytes) after ${result.steps} steps in ${(result.wallMs / 1000).toFixed(1)} s\n`);
        process.stdout.write(JSON.stringify(summary) + '\n');
      } finally {
        await engine.dispose();
      }
    });
}

function checkFile(option: string, path: string): TrainingFileCheck {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`${option}: cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  const check = validateTrainingJsonl(text);
  if (check.problems.length > 0) {
    const n = check.problems.length + check.moreProblems;
    throw new Error(`${option} ${path} has ${n} bad line(s); nothing was trained:\n${describeProblems(check)}`);
  }
  return check;
}

function refuseProblems(option: string, path: string, problems: readonly TrainingFileProblem[]): void {
  if (problems.length === 0) return;
  throw new Error(`${option} ${path} has ${problems.length} conversation(s) that cannot be trained on; nothing was trained:\n${describeProblems({ problems: [...problems], moreProblems: 0 })}`);
}

/** Whole or not at all: a crash mid-write leaves the previous file (or none), never half of one. */
function writeAtomically(path: string, bytes: Uint8Array): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, bytes);
  renameSync(tmp, path);
}

function mean(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}
