/** `svc doctor`: which WebGPU adapter the engine would use here, what it offers, and why others were skipped. */
import type { Command } from 'commander';
import { describeAdapter } from '../../engine/gpu/select.ts';
import { adapterChoiceFromEnv, openNodeDevice } from '../../engine/platform/node.ts';

export function registerDoctor(program: Command): void {
  program
    .command('doctor')
    .description('show the chosen WebGPU adapter, its features and limits, and why other adapters were skipped')
    .option('--adapter <choice>', 'force an adapter: auto, gpu, swiftshader, llvmpipe (env SVC_ADAPTER)')
    .option('--json', 'print JSON instead of text')
    .action(async (opts: { adapter?: string; json?: boolean }) => {
      const choice = opts.adapter !== undefined ? adapterChoiceFromEnv(opts.adapter, '--adapter') : adapterChoiceFromEnv();
      const sel = await openNodeDevice(choice);
      const report = {
        chosen: sel.choice,
        adapter: describeAdapter(sel.adapterInfo),
        featureLevel: sel.featureLevel,
        software: sel.caps.software,
        skipped: sel.skipped,
        adapterFeatures: sel.adapterFeatures,
        deviceFeatures: [...sel.device.features].map(String).sort(),
        engineUses: { f16: sel.caps.f16, subgroups: sel.caps.subgroups, subgroupSize: sel.caps.subgroups ? [sel.caps.subgroupMinSize, sel.caps.subgroupMaxSize] : null, timestamps: sel.caps.timestamps },
        limits: sel.adapterLimits,
      };
      sel.device.destroy();
      if (opts.json) {
        process.stdout.write(JSON.stringify(report, null, 2) + '\n');
        return;
      }
      const out: string[] = [];
      out.push(`adapter:        ${report.chosen} (${report.adapter})`);
      out.push(`feature level:  ${report.featureLevel}${report.software ? ', software (CPU) adapter' : ''}`);
      for (const s of report.skipped) out.push(`skipped:        ${s.name}: ${s.reason}`);
      out.push(`engine uses:    shader-f16 ${yes(report.engineUses.f16)}, subgroups ${yes(report.engineUses.subgroups)}${report.engineUses.subgroupSize ? ` (size ${report.engineUses.subgroupSize.join('-')})` : ''}, timestamp-query ${yes(report.engineUses.timestamps)}`);
      out.push(`features:       ${report.adapterFeatures.join(', ')}`);
      out.push('limits:');
      for (const [k, v] of Object.entries(report.limits).sort()) out.push(`  ${k.padEnd(44)} ${v}`);
      process.stdout.write(out.join('\n') + '\n');
    });
}

function yes(b: boolean): string {
  return b ? 'yes' : 'no';
}
