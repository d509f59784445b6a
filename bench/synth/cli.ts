/**
 * Synthesize a GGUF with a real model's shapes and random weights:
 *   npx tsx bench/synth/cli.ts --preset smollm2-135m --type q8_0 --out /tmp/smollm2-q8_0.gguf [--seed 1]
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { createProgressBar, formatBytes } from '../../engine/loader/progress-bar-node.ts';
import { PRESETS } from './presets.ts';
import { SYNTH_TYPES, type SynthType } from './model.ts';
import { synthesizeToFile } from './synthesize-node.ts';

const program = new Command('synth')
  .description('write a GGUF with the exact shapes and metadata of a real model and seeded random weights')
  .addOption(new Option('--preset <name>', 'model to imitate').choices(Object.keys(PRESETS)).makeOptionMandatory())
  .addOption(new Option('--type <type>', 'type of the big matrices (norms stay F32)').choices(Object.keys(SYNTH_TYPES)).default('q8_0'))
  .requiredOption('--out <file>', 'GGUF file to write')
  .option('--seed <n>', 'random seed', (v) => {
    if (!/^\d+$/.test(v) || Number(v) > 0xffffffff) throw new InvalidArgumentError(`expected an integer 0..4294967295, got "${v}"`);
    return Number(v);
  }, 1)
  .action(async (o: { preset: string; type: SynthType; out: string; seed: number }) => {
    const started = performance.now();
    const bar = createProgressBar(`${o.preset} ${o.type}`);
    const layout = await synthesizeToFile(o.out, { ...o, onProgress: (done, total) => bar.update(done, total) });
    bar.finish();
    const secs = (performance.now() - started) / 1000;
    process.stdout.write(`${o.out}: ${o.preset} ${o.type} seed ${o.seed}, ${layout.tensors.length} tensors, ${formatBytes(layout.fileSize)} (${layout.fileSize} bytes) in ${secs.toFixed(1)} s\n`);
  });

await program.parseAsync().catch((e: Error) => {
  process.stderr.write(`synth: ${e.message}\n`);
  process.exit(1);
});
