/** `svc plan set | list`: an account's plan, payment and (Enterprise) limits; the plans on offer. */
import { type Command } from 'commander';
import { intOption } from '../options.ts';
import { DATA_OPTION_HELP, describeAccount, STORE_OPTION_HELP, withAdmin, type StoreFlags } from './keys.ts';
import { loadPlans } from '../../adapters/config-node.ts';

export function registerPlan(program: Command): void {
  const plan = program.command('plan').description("change an account's plan, or list the plans");

  plan
    .command('set <key-prefix> <plan>')
    .description('put the account that owns the key on a plan; takes effect with its next request')
    .option('--paid', 'mark the account as paying: it keeps working after the trial')
    .option('--rpm <n>', 'requests per minute, for plans with per-account limits (Enterprise)', intOption('--rpm', 1))
    .option('--monthly <n>', 'requests per month, for plans with per-account limits (Enterprise)', intOption('--monthly', 1))
    .option('--data <dir>', DATA_OPTION_HELP)
    .option('--store <url>', STORE_OPTION_HELP)
    .action(async (prefix: string, planId: string, opts: { paid?: boolean; rpm?: number; monthly?: number } & StoreFlags) => {
      const account = await withAdmin(opts, async (admin) => {
        const found = await admin.resolveKey(prefix);
        return admin.setPlan(found.account.id, { plan: planId, paid: opts.paid ? true : undefined, rpmLimit: opts.rpm, monthlyLimit: opts.monthly }, Date.now());
      });
      const limits = account.rpmLimit !== null ? `, ${account.rpmLimit}/min, ${account.monthlyLimit}/month` : '';
      process.stdout.write(`account ${account.id}: ${describeAccount(account)}${limits}\n`);
    });

  plan
    .command('list')
    .description('the plans in config/plans.json: limits per key (per minute, per month, at once), specialists and features')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => {
      const plans = loadPlans();
      if (opts.json) {
        process.stdout.write(JSON.stringify(plans.file, null, 2) + '\n');
        return;
      }
      for (const id of plans.ids()) {
        const p = plans.get(id)!;
        const rates = p.requestsPerMinute === null ? 'limits set per account' : `${p.requestsPerMinute}/min, ${p.requestsPerMonth}/month`;
        const limits = `${rates}, ${p.maxConcurrent} at once`;
        const features = Object.entries(p.features).filter(([, on]) => on).map(([f]) => f);
        process.stdout.write(`${id.padEnd(13)} ${p.name}: ${limits}; specialists ${p.specialists.join(', ')}; features ${features.join(', ') || 'none'}\n`);
      }
      process.stdout.write(`every account starts with a ${plans.trialDays}-day trial\n`);
    });
}
