/** What the scheduler asks of the model for one step: a flattened batch of tokens and rows to sample. */
import type { TopKRow } from '../../kernels/sampling/topk.ts';

export interface PenaltySpec {
  presence: number;
  frequency: number;
  repetition: number;
  entries: { token: number; count: number; inWindow: boolean }[];
}

export interface SampleRowSpec {
  temperature: number;
  seed: number;
  /** Index of this token in the sequence's output: fresh noise per token from one seed. */
  counter: number;
  /** Allowed-token bitmask (grammar), or null. */
  mask: Uint32Array | null;
  penalties: PenaltySpec | null;
  /** Also return the top-K candidates (top-k / top-p sampling on the CPU). */
  candidates: boolean;
}

export interface SubmittedStep {
  read(): Promise<void>;
}

export interface StepRunner {
  readonly maxTokensPerStep: number;
  /**
   * The most tokens a step gives a prompt it does not finish (default maxTokensPerStep). A prompt whose
   * rest fits the step's room goes whole, so the room above this lets a prompt end in one step instead of
   * leaving a short last chunk, which costs nearly a whole step of its own.
   */
  readonly prefillChunkTokens?: number;
  /**
   * The most tokens of a step that carries other sequences' decode rows (default maxTokensPerStep), so a
   * long prompt beside them is computed in steps they can wait for.
   */
  readonly decodingStepTokens?: number;
  readonly maxRowsPerStep: number;
  /** Start filling a new step. */
  begin(): void;
  /**
   * Add a token at `position` of the sequence in cache slot `slot`, computed with the LoRA adapter in
   * pool slot `adapter` (absent or -1: none); returns its index in the step.
   */
  addToken(token: number, position: number, slot: number, adapter?: number): number;
  /**
   * Pipelined decode: add the token row `row` of the step submitted last samples, read on the GPU (a copy
   * into this step's inputs) before that step is read back. Only for runners with `submit`.
   */
  addSampledToken?(row: number, position: number, slot: number, adapter?: number): number;
  /**
   * Before this step's work, copy positions 0 .. rows - 1 of KV page `from` into the same positions of
   * page `to`, in every layer (a prefix-cache page whose start a prompt matches). Absent where the
   * runner cannot; the prefix cache then shares whole pages only.
   */
  copyKvRows?(from: number, to: number, rows: number): void;
  /** Ask for the logits after token `tokenIndex` to be sampled; returns the row index. */
  addRow(tokenIndex: number, spec: SampleRowSpec): number;
  /** Of the last run(), the milliseconds before its first submit (uploads, encoding): the device had no work. */
  readonly lastHostMs?: number;
  /**
   * Of the last step read, the milliseconds its queue.submit calls took: where the backend records the
   * commands at submit (Dawn's Vulkan backend), this is host work that lastHostMs does not see.
   */
  readonly lastSubmitMs?: number;
  /** Run the step on the GPU: one command buffer, one readback of the sampled rows. */
  run(): Promise<void>;
  /**
   * Pipelined decode: submit the step, resolving once it is all submitted (the next step's inputs then
   * queue after it); `read` of the returned step waits for its sampled rows (then `sampled` and
   * `candidates` answer for it). At most two steps are in flight, each read in the order submitted.
   * Absent where the runner cannot.
   */
  submit?(): Promise<SubmittedStep>;
  sampled(row: number): { token: number; logprob: number };
  candidates(row: number): TopKRow;
}
