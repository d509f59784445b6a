/**
 * The Tuner on our WebGPU engine: conversations rendered with the model's chat template
 * (engine/train/render.ts), trained by engine/train/fine-tune.ts, adapters served through the engine's
 * adapter registry. The engine and the training functions are passed in, typed by what is used of them,
 * so this file stands apart from how they are loaded (`svc serve` wires it: cli/commands/serve.ts).
 */
import { describeProblems } from '../../engine/train/data.ts';
import type { FineTuneHooks, FineTuneResult, FineTuneSettings, TrainingConversation, TrainingExample, TrainingFileProblem } from '../../engine/train/types.ts';
import type { TextEngine } from '../../engine/types.ts';
import { TuneInputError, type Tuner, type TuneInput, type TuneOutput } from './tuner.ts';

/** What the tuner uses of the engine: generation's model, its adapters, and how busy it is. */
export interface AdapterEngine extends TextEngine {
  loadAdapter(source: Uint8Array, opts?: { name?: string }): Promise<{ id: string }>;
  unloadAdapter(id: string): unknown;
  stats(): { activeSequences: number; waitingSequences: number };
}

/** engine/train's entry points (fine-tune.ts and render.ts). */
export interface TrainingFunctions<E extends AdapterEngine> {
  fineTune(engine: E, train: TrainingExample[], validation: TrainingExample[] | undefined, settings: FineTuneSettings, hooks?: FineTuneHooks): Promise<FineTuneResult>;
  /** renderTrainingExamplesAsync on a server (it gives the thread back between conversations); the sync one also fits. */
  renderTrainingExamples(
    model: { tokenizer: E['tokenizer']; chatTemplate?: string },
    conversations: readonly TrainingConversation[],
    opts: { maxTokens: number },
  ): { examples: TrainingExample[]; problems: TrainingFileProblem[] } | Promise<{ examples: TrainingExample[]; problems: TrainingFileProblem[] }>;
}

export function engineTuner<E extends AdapterEngine>(engine: E, training: TrainingFunctions<E>): Tuner {
  const maxTokens = engine.info.contextLength;
  const render = async (what: string, conversations: readonly TrainingConversation[]): Promise<TrainingExample[]> => {
    const { examples, problems } = await training.renderTrainingExamples({ tokenizer: engine.tokenizer, chatTemplate: engine.info.chatTemplate }, conversations, { maxTokens });
    if (problems.length > 0) {
      const listed = problems.slice(0, 20);
      throw new TuneInputError(`${what} cannot be used with this model:\n${describeProblems({ problems: listed, moreProblems: problems.length - listed.length })}`);
    }
    return examples;
  };
  return {
    maxTokens,
    async train(input: TuneInput, hooks: FineTuneHooks): Promise<TuneOutput> {
      const train = await render('the training file', input.train);
      const validation = input.validation ? await render('the validation file', input.validation) : undefined;
      let r: FineTuneResult;
      try {
        r = await training.fineTune(engine, train, validation, input.settings, hooks);
      } catch (e) {
        // A run that diverged is the data's and the settings' matter, said as the trainer says it.
        if (e instanceof Error && /^training diverged/.test(e.message)) throw new TuneInputError(e.message);
        throw e;
      }
      return { adapter: r.adapter, trainedTokens: r.trainedTokens, steps: r.steps, trainLoss: r.trainLoss, validationLoss: r.validationLoss };
    },
    async loadAdapter(adapter, name) {
      return (await engine.loadAdapter(adapter, { name })).id;
    },
    async unloadAdapter(id) {
      await engine.unloadAdapter(id);
    },
    inferenceBusy() {
      const s = engine.stats();
      return s.activeSequences + s.waitingSequences > 0;
    },
  };
}
