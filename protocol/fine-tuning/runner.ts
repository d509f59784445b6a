/**
 * Runs fine-tuning jobs in the background beside serving, one at a time per replica: checks the files of
 * new jobs (validating_files → queued | failed), claims the oldest queued job (or a running one whose
 * replica's lease lapsed), trains it through the Tuner and finishes it (succeeded | failed). Training
 * yields to inference before every step, for at most `maxYieldMs`, so a busy server still trains and
 * requests wait at most one step. Checkpoints go to the store; a job whose replica stopped or died
 * resumes from its last one. A cancel aborts the training at its next step.
 */
import { LORA_TARGETS } from '../../engine/lora/adapter-file.ts';
import { validateTrainingJsonlAsync, describeProblems } from '../../engine/train/data.ts';
import type { FineTuneHooks, TrainingConversation } from '../../engine/train/types.ts';
import { billingPeriodAt } from '../billing-period.ts';
import type { Clock } from '../clock.ts';
import { randomBase62 } from '../ids.ts';
import type { Logger } from '../logger.ts';
import { fineTunedModelName } from '../model-names.ts';
import type { AdapterCache } from './adapter-cache.ts';
import type { FineTuningStore, JobError, JobRecord, NewJobEvent } from './records.ts';
import { BASE_LEARNING_RATE } from './requests.ts';
import { TuneInputError, type Tuner } from './tuner.ts';

export interface RunnerOptions {
  /** How often to look for work when nothing wakes the runner (jobs of other replicas, lapsed leases). */
  pollMs: number;
  /** How long a claimed job stays this replica's without a renewal. */
  leaseMs: number;
  /** Steps between checkpoints (the trainer also saves one at each epoch's end). */
  checkpointEvery: number;
  /** The longest one step waits for inference to go quiet. */
  maxYieldMs: number;
  /** Least time between two step-progress events of a job (the first and last step are always reported). */
  progressEventMs: number;
}

export const DEFAULT_RUNNER_OPTIONS: RunnerOptions = { pollMs: 5000, leaseMs: 120_000, checkpointEvery: 10, maxYieldMs: 2000, progressEventMs: 1000 };

/** Names tried for a model before the job fails (`suffix`, `suffix-2`, …). */
const NAME_ATTEMPTS = 50;
const YIELD_POLL_MS = 20;
const RENEW_EVERY_MS = 10_000;

type StopReason = 'cancelled' | 'shutdown' | 'lease-lost';

export class JobRunner {
  /** This replica's name in leases. */
  readonly id = `runner-${randomBase62(12)}`;
  private readonly opts: RunnerOptions;
  private running: Promise<void> | undefined;
  private stopped = false;
  private wakeUp: (() => void) | undefined;
  private current: { jobId: string; controller: AbortController } | undefined;

  constructor(
    private readonly store: FineTuningStore,
    private readonly tuner: () => Promise<Tuner>,
    private readonly clock: Clock,
    private readonly logger: Logger,
    opts: Partial<RunnerOptions> = {},
    private readonly adapters?: AdapterCache,
    /** The specialist's system prompt, which serving puts before every conversation with the model. */
    private readonly systemPrompt: (specialist: string) => string | undefined = () => undefined,
  ) {
    this.opts = { ...DEFAULT_RUNNER_OPTIONS, ...opts };
  }

  /** Starts the background loop (once). */
  start(): void {
    this.running ??= this.loop();
  }

  /** Look for work now (a job was created). */
  wake(): void {
    this.wakeUp?.();
  }

  /** The job was cancelled: stop training it now if it runs here. */
  cancelled(jobId: string): void {
    if (this.current?.jobId === jobId) this.current.controller.abort('cancelled' satisfies StopReason);
  }

  /** The job training now, if any (for tests and operators). */
  get currentJob(): string | undefined {
    return this.current?.jobId;
  }

  /** Stops the loop; a job in training is left for the next replica (or restart) to resume from its checkpoint. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.current?.controller.abort('shutdown' satisfies StopReason);
    this.wake();
    await this.running;
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      let worked = false;
      try {
        await this.validatePending();
        const job = this.stopped ? undefined : await this.store.claimJob(this.id, this.clock.now(), this.clock.now() + this.opts.leaseMs);
        if (job) {
          worked = true;
          await this.run(job);
        }
      } catch (e) {
        this.logger.error({ err: e }, 'fine-tuning runner: a step failed; retrying after the poll interval');
      }
      if (!worked && !this.stopped) await this.idle();
    }
  }

  private idle(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.opts.pollMs) as unknown as { unref?: () => void };
      timer.unref?.();
      const self = this;
      function done() {
        clearTimeout(timer as unknown as ReturnType<typeof setTimeout>);
        self.wakeUp = undefined;
        resolve();
      }
      this.wakeUp = done;
    });
  }

  private event(jobId: string, message: string, data: Record<string, unknown> = {}, type: NewJobEvent['type'] = 'message', level: NewJobEvent['level'] = 'info'): NewJobEvent {
    return { jobId, createdAt: this.clock.now(), level, message, type, data };
  }

  /** validating_files → queued, or failed naming what is wrong with the files. */
  private async validatePending(): Promise<void> {
    for (const job of await this.store.jobsToValidate(10)) {
      const problem = await this.checkFiles(job);
      if (problem) {
        await this.store.transitionJob(job.id, ['validating_files'], 'failed', { error: problem, finishedAt: this.clock.now(), event: this.event(job.id, problem.message, {}, 'message', 'error') });
      } else {
        await this.store.transitionJob(job.id, ['validating_files'], 'queued', { event: this.event(job.id, 'Files validated, moving job to queued state') });
      }
    }
  }

  private async checkFiles(job: JobRecord): Promise<JobError | undefined> {
    for (const [param, id] of [['training_file', job.trainingFile], ['validation_file', job.validationFile]] as const) {
      if (id === null) continue;
      const data = await this.conversations(job, id);
      if (typeof data === 'string') return { code: 'invalid_training_file', message: `${param} ${id}: ${data}`.slice(0, 4000), param };
    }
    return undefined;
  }

  /** A file's conversations, or why they cannot be used. */
  private async conversations(job: JobRecord, fileId: string): Promise<TrainingConversation[] | string> {
    const bytes = await this.store.fileContent(job.accountId, fileId);
    if (!bytes) return 'the file was deleted before the job could use it';
    const check = await validateTrainingJsonlAsync(new TextDecoder().decode(bytes));
    return check.problems.length > 0 ? describeProblems(check) : check.conversations;
  }

  private async run(job: JobRecord): Promise<void> {
    const controller = new AbortController();
    this.current = { jobId: job.id, controller };
    let leaseUntil = this.clock.now() + this.opts.leaseMs;
    const log = { jobId: job.id, runner: this.id };
    try {
      const train = await this.conversations(job, job.trainingFile);
      const validation = job.validationFile === null ? undefined : await this.conversations(job, job.validationFile);
      if (typeof train === 'string' || typeof validation === 'string') {
        const [param, why] = typeof train === 'string' ? ['training_file', train] : ['validation_file', validation as string];
        await this.fail(job, { code: 'invalid_training_file', message: `${param}: ${why}`, param });
        return;
      }
      // Trained on what serving will send: the specialist's system prompt first, then the conversation.
      const prompt = this.systemPrompt(job.specialist);
      const framed = (cs: TrainingConversation[]) => (prompt ? cs.map((c) => ({ ...c, messages: [{ role: 'system' as const, content: prompt }, ...c.messages] })) : cs);
      const resume = await this.store.checkpoint(job.id);
      await this.store.addJobEvent(this.event(job.id, resume ? `Resuming fine-tuning from the checkpoint at step ${resume.step}` : 'Fine-tuning job started'));
      this.logger.info({ ...log, resumeStep: resume?.step ?? null }, 'fine-tuning job started');
      const tuner = await this.tuner();
      let lastProgress = -Infinity;
      const h = job.hyperparameters;
      const hooks: FineTuneHooks = {
        signal: controller.signal,
        // An abort is not thrown here: the training loop sees the signal and saves a checkpoint on its way out.
        beforeStep: async () => {
          if (controller.signal.aborted) return;
          // Renewed often enough that a cancel made on another replica stops this one within seconds.
          if (this.clock.now() > leaseUntil - this.opts.leaseMs + Math.min(this.opts.leaseMs / 2, RENEW_EVERY_MS)) {
            const until = this.clock.now() + this.opts.leaseMs;
            if (!(await this.store.renewLease(job.id, this.id, until))) controller.abort('lease-lost' satisfies StopReason);
            else leaseUntil = until;
          }
          // Inference first: wait while requests run or wait, but never more than maxYieldMs per step.
          const deadline = performance.now() + this.opts.maxYieldMs;
          while (tuner.inferenceBusy() && performance.now() < deadline && !controller.signal.aborted) await sleep(YIELD_POLL_MS);
        },
        // A step that finishes after a cancel (or a shutdown) is not reported: the job's last event stays
        // the cancellation, and a restart reports the step again from the checkpoint saved on the way out.
        onProgress: (p) => {
          if (controller.signal.aborted) return;
          const now = performance.now();
          if (p.step !== 1 && p.step !== p.totalSteps && now - lastProgress < this.opts.progressEventMs) return;
          lastProgress = now;
          const data = { step: p.step, total_steps: p.totalSteps, epoch: p.epoch, train_loss: p.loss, tokens_per_second: Math.round(p.tokensPerSecond), eta_ms: Math.round(p.etaMs) };
          this.record(this.event(job.id, `Step ${p.step}/${p.totalSteps}: training loss=${p.loss.toFixed(4)}`, data, 'metrics'));
        },
        onEpoch: (e) => {
          if (controller.signal.aborted) return;
          const valid = e.validationLoss === null ? '' : `, validation loss=${e.validationLoss.toFixed(4)}`;
          this.record(this.event(job.id, `Epoch ${e.epoch} done: training loss=${e.trainLoss.toFixed(4)}${valid}`, { epoch: e.epoch, train_loss: e.trainLoss, valid_loss: e.validationLoss }, 'metrics'));
        },
        checkpoint: {
          every: this.opts.checkpointEvery,
          resumeFrom: resume?.state,
          save: async (state, step) => {
            if (await this.store.saveCheckpoint(job.id, step, state, this.clock.now())) await this.store.addJobEvent(this.event(job.id, `Checkpoint saved at step ${step}`, { step }));
          },
        },
      };
      const settings = {
        lora: { rank: h.loraRank, alpha: h.loraAlpha, targets: LORA_TARGETS },
        epochs: h.nEpochs,
        batchSize: h.batchSize,
        learningRate: BASE_LEARNING_RATE * h.learningRateMultiplier,
        seed: job.seed,
        ...(tuner.maxTokens ? { maxTokens: tuner.maxTokens } : {}),
      };
      const input = { train: framed(train), validation: validation && framed(validation), settings };
      let out;
      try {
        try {
          out = await tuner.train(input, hooks);
        } catch (e) {
          // The job's own checkpoint, made by another setup (the specialist's prompt or the model changed
          // across a restart, a file from an older version): the job starts over rather than failing.
          if (!(resume && e instanceof Error && e.name === 'CheckpointMismatchError') || controller.signal.aborted) throw e;
          await this.store.addJobEvent(this.event(job.id, `The checkpoint at step ${resume.step} cannot be used (${e.message}); training starts over`, { step: resume.step }, 'message', 'warn'));
          this.logger.warn({ ...log, err: e }, 'fine-tuning checkpoint refused; starting over');
          out = await tuner.train(input, { ...hooks, checkpoint: { ...hooks.checkpoint!, resumeFrom: undefined } });
        }
      } catch (e) {
        if (controller.signal.aborted) return this.stopped_(job, controller.signal.reason as StopReason);
        if (e instanceof TuneInputError) return this.fail(job, { code: 'invalid_training_file', message: e.message, param: 'training_file' });
        this.logger.error({ ...log, err: e }, 'fine-tuning job failed');
        return this.fail(job, { code: 'training_failed', message: 'Training failed on the server. The failure is logged; create a new job to try again.', param: null });
      }
      if (controller.signal.aborted) return this.stopped_(job, controller.signal.reason as StopReason);
      await this.succeed(job, out.adapter, out.trainedTokens);
    } finally {
      this.current = undefined;
    }
  }

  private async succeed(job: JobRecord, adapter: Uint8Array, trainedTokens: number): Promise<void> {
    const base = job.suffix ?? job.id.slice('ftjob-'.length, 'ftjob-'.length + 8).toLowerCase();
    for (let i = 1; i <= NAME_ATTEMPTS; i++) {
      const name = fineTunedModelName(job.specialist, job.accountId, i === 1 ? base : `${base}-${i}`);
      const now = this.clock.now();
      const result = await this.store.completeJob({
        jobId: job.id,
        runner: this.id,
        model: { name, accountId: job.accountId, specialist: job.specialist, jobId: job.id, createdAt: now },
        adapter,
        trainedTokens,
        periodStart: billingPeriodAt(now).start,
        finishedAt: now,
        event: this.event(job.id, `The job has successfully completed: new fine-tuned model ${name}`, { fine_tuned_model: name, trained_tokens: trainedTokens }),
      });
      if (result === 'name-taken') continue;
      if (result === 'done') {
        this.logger.info({ jobId: job.id, model: name, trainedTokens }, 'fine-tuning job succeeded');
        // Loaded now, so the first request to the new model does not wait for it.
        if (this.adapters) await this.adapters.acquire(job.accountId, name).then((l) => l?.release(), (e: unknown) => this.logger.warn({ err: e, model: name }, 'could not load a new fine-tuned adapter'));
      }
      return;
    }
    await this.fail(job, { code: 'model_name_taken', message: `Every model name from ${fineTunedModelName(job.specialist, job.accountId, base)} to …-${NAME_ATTEMPTS} is taken; use another suffix.`, param: 'suffix' });
  }

  private async fail(job: JobRecord, given: JobError): Promise<void> {
    // Problems quoted from a caller's file are bounded like everything else stored.
    const error = { ...given, message: given.message.slice(0, 4000) };
    await this.store.transitionJob(job.id, ['running', 'queued'], 'failed', { error, finishedAt: this.clock.now(), runner: this.id, event: this.event(job.id, `Fine-tuning job failed: ${error.message}`, {}, 'message', 'error') });
  }

  private async stopped_(job: JobRecord, reason: StopReason): Promise<void> {
    this.logger.info({ jobId: job.id, reason }, 'fine-tuning job stopped');
    // Shutting down: the job stays running for the next replica (or this one restarted) to resume at once.
    if (reason === 'shutdown') await this.store.releaseLease(job.id, this.id);
  }

  /** Progress events are best effort: a failed write must not stop the training. */
  private record(e: NewJobEvent): void {
    void Promise.resolve()
      .then(() => this.store.addJobEvent(e))
      .catch((err: unknown) => this.logger.warn({ err, jobId: e.jobId }, 'could not record a fine-tuning event'));
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
