/**
 * `svc doctor`: which WebGPU adapter the engine would use here, what it offers, and why others were skipped.
 * `--calibrate` also measures what that adapter can do (kernels/probes/): the ceilings the engine's speed
 * is to be judged against.
 */
import type { Command } from 'commander';
import type { GpuCaps } from '../../kernels/runtime/caps.ts';
import { describeAdapter } from '../../engine/gpu/select.ts';
import { adapterChoiceFromEnv, openNodeDevice } from '../../engine/platform/node.ts';
import { DEFAULT_STREAM_BYTES, measureAdapterLimits, type AdapterLimits } from '../../kernels/probes/limits.ts';
import { intOption } from '../options.ts';

export function registerDoctor(program: Command): void {
  program
    .command('doctor')
    .description('show the chosen WebGPU adapter, its features and limits, and why other adapters were skipped')
    .option('--adapter <choice>', 'force an adapter: auto, gpu, swiftshader, llvmpipe (env SVC_ADAPTER)')
    .option('--json', 'print JSON instead of text')
    .option('--calibrate', "measure the adapter's streaming read, FMA throughput and dispatch cost (seconds to a minute on a CPU adapter)")
    .option('--calibrate-mib <n>', 'buffer size of the streaming-read measurement', intOption('--calibrate-mib', 1, 1024), DEFAULT_STREAM_BYTES / 2 ** 20)
    .action(async (opts: { adapter?: string; json?: boolean; calibrate?: boolean; calibrateMib: number }) => {
      const choice = opts.adapter !== undefined ? adapterChoiceFromEnv(opts.adapter, '--adapter') : adapterChoiceFromEnv();
      const sel = await openNodeDevice(choice);
      const report = {
        chosen: sel.choice,
        adapter: describeAdapter(sel.adapterInfo),
        featureLevel: sel.featureLevel,
        why: sel.reason,
        software: sel.caps.software,
        skipped: sel.skipped,
        adapterFeatures: sel.adapterFeatures,
        deviceFeatures: [...sel.device.features].map(String).sort(),
        engineUses: { f16: sel.caps.f16, subgroups: sel.caps.subgroups, subgroupSize: sel.caps.subgroups ? [sel.caps.subgroupMinSize, sel.caps.subgroupMaxSize] : null, timestamps: sel.caps.timestamps, packedDot: sel.caps.packedDot },
        limits: sel.adapterLimits,
        ...(sel.workerPinning ? { workerThreads: sel.workerPinning } : {}),
        ...(opts.calibrate ? { calibration: await calibrate(sel.device, sel.caps, opts.calibrateMib, !opts.json) } : {}),
      };
      sel.device.destroy();
      if (opts.json) {
        process.stdout.write(JSON.stringify(report, null, 2) + '\n');
        return;
      }
      const out: string[] = [];
      out.push(`adapter:        ${report.chosen} (${report.adapter})`);
      out.push(`why:            ${report.why}`);
      out.push(`feature level:  ${report.featureLevel}${report.software ? ', software (CPU) adapter' : ''}`);
      for (const s of report.skipped) out.push(`skipped:        ${s.name}: ${s.reason}`);
      out.push(`engine uses:    shader-f16 ${yes(report.engineUses.f16)}, subgroups ${yes(report.engineUses.subgroups)}${report.engineUses.subgroupSize ? ` (size ${report.engineUses.subgroupSize.join('-')})` : ''}, timestamp-query ${yes(report.engineUses.timestamps)}, dot4I8Packed ${yes(report.engineUses.packedDot)}${report.engineUses.packedDot && !report.software ? ' (Q8_0 products in int8)' : ''}`);
      if (report.workerThreads) out.push(`worker threads: ${report.workerThreads.reason}`);
      // Decode steps chain each layer's FFN into one dispatch where llvmpipe's threads are pinned (engine/model/layer-chains.ts).
      if (report.workerThreads && report.workerThreads.pinned.length > 0 && report.software) out.push(`decode chains: each layer's O, gate|up and down products, and its Q|K|V product with attention, in one dispatch each of ${report.workerThreads.pinned.length} persistent workgroups, for models whose products read int8 x and whose heads are whole 32-value blocks (productChains)`);
      out.push(`features:       ${report.adapterFeatures.join(', ')}`);
      out.push('limits:');
      for (const [k, v] of Object.entries(report.limits).sort()) out.push(`  ${k.padEnd(44)} ${v}`);
      if (report.calibration) out.push('calibration:', ...calibrationSentences(report.calibration).map((line) => `  ${line}`));
      process.stdout.write(out.join('\n') + '\n');
    });
}

function calibrate(device: GPUDevice, caps: GpuCaps, mib: number, progress: boolean): Promise<AdapterLimits> {
  // Progress goes to stderr so stdout stays the report (and valid JSON with --json).
  const onProgress = progress ? (what: string) => process.stderr.write(`calibrating: ${what}\n`) : undefined;
  return measureAdapterLimits(device, caps, { streamBytes: mib * 2 ** 20, onProgress });
}

/** The probe figures as sentences, with the step cost they imply. */
function calibrationSentences(c: AdapterLimits): string[] {
  const worstLayout = c.streamReadVariants.reduce((a, b) => (b.GBps < a.GBps ? b : a));
  const mib = (c.streamReadBytes / 2 ** 20).toFixed(0);
  return [
    `Streaming read: ${c.streamReadGBps.toFixed(2)} GB/s at best (${c.streamReadBest.layout} layout, workgroup size ${c.streamReadBest.workgroupSize}, ${mib} MiB read per dispatch); ` +
      `the slowest layout tried (${worstLayout.layout}, workgroup size ${worstLayout.workgroupSize}) reached ${worstLayout.GBps.toFixed(2)} GB/s.`,
    `Arithmetic: ${c.fmaGflops.toFixed(1)} GFLOP/s of f32 FMA at best (${c.fmaBest.accumulators} independent vec4 accumulators, workgroup size ${c.fmaBest.workgroupSize}).`,
    `Dispatch: ${c.dispatchUs.toFixed(1)} µs per dispatch in one long pass (${c.dispatchesPerPass} dispatches, one submit); one lone submit with a readback takes ${c.roundTripUs.toFixed(0)} µs.`,
    `So a decode step that reads B bytes of weights in D dispatches takes at least B / ${c.streamReadGBps.toFixed(2)} GB/s + D × ${c.dispatchUs.toFixed(1)} µs + ${c.roundTripUs.toFixed(0)} µs here (best of ${c.runs} runs each).`,
  ];
}

function yes(b: boolean): string {
  return b ? 'yes' : 'no';
}
