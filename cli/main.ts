/**
 * `svc`: one command-line tool for the engine (generate, tokenize, doctor, finetune), the service (serve) and its
 * stored state (keys, plan). Each command lives in cli/commands/<name>.ts and registers itself here.
 * Only a command's own output goes to stdout; logs and progress go to stderr.
 */
import { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { registerDoctor } from './commands/doctor.ts';
import { registerFinetune } from './commands/finetune.ts';
import { registerKeys } from './commands/keys.ts';
import { registerPlan } from './commands/plan.ts';
import { registerServe } from './commands/serve.ts';
import { registerGenerate } from './commands/generate.ts';
import { registerTokenize } from './commands/tokenize.ts';
import { registerWeb } from './commands/web.ts';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

const program = new Command()
  .name('svc')
  .description('Specialist inference service: a WebGPU LLM engine behind an OpenAI-compatible API')
  .version(pkg.version)
  .showHelpAfterError();

registerGenerate(program);
registerTokenize(program);
registerDoctor(program);
registerServe(program);
registerKeys(program);
registerPlan(program);
registerWeb(program);
registerFinetune(program);

try {
  await program.parseAsync(process.argv);
} catch (e) {
  process.stderr.write(`svc: ${(e as Error).message}\n`);
  process.exitCode = process.exitCode || 1;
}
