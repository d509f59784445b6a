/** `POST /v1/chat/completions`: the provider's chat completion, whole or streamed as `chat.completion.chunk`s. */
import type { GenerationResult } from '../../engine/types.ts';
import type { Caller, Reservation } from '../access.ts';
import { applicantFor, type Ticket } from '../admission.ts';
import type { Outcome, RequestContext, ServiceParts } from '../context.ts';
import { modelNotFound } from '../errors.ts';
import { answerProbability, CHAT_PARAMS, MeteredRun, prepareRun, tokenLogprobs, type PreparedRun, type TokenLogprob } from '../generation.ts';
import { completionId } from '../ids.ts';
import { fineTunedModelFor, withAdapter } from '../fine-tuning/serving.ts';
import { isFineTunedModelName, specialistForModel } from '../model-names.ts';
import { chatOutputPlan } from '../output/chat-output.ts';
import { reportsConfidence } from '../output/plan.ts';
import { assembleMessage, outputReader, type Delta } from '../output/reader.ts';
import { parseChatRequest, type ChatRequest } from '../requests/chat.ts';

export async function chatCompletions(svc: ServiceParts, caller: Caller, ctx: RequestContext): Promise<Outcome> {
  await svc.access.takeRequest(caller);
  const body = await ctx.readBody();
  const req = parseChatRequest(body);
  ctx.record.model = req.model;
  ctx.record.stream = req.stream;

  const fineTuned = isFineTunedModelName(req.model) ? await fineTunedModelFor(svc, caller, req.model, 'model') : undefined;
  const name = fineTuned?.specialist ?? specialistForModel(req.model, (n) => svc.specialists.has(n));
  if (!name) throw modelNotFound(req.model);
  ctx.record.specialist = name;
  svc.access.requireSpecialist(caller, name, 'model');
  // A plan without the feature hears that before anything about how the parameter was used.
  for (const f of req.features) svc.access.requireFeature(caller, f.feature, f.param);
  const specialist = svc.specialists.get(name)!;
  const output = chatOutputPlan(specialist, req);
  for (const f of output.features) svc.access.requireFeature(caller, f.feature, f.param);
  await svc.access.requireQuota(caller);

  // A place among the running generations before any work on the prompt, so overload costs nothing more.
  let ticket = await svc.admission.admit(applicantFor(caller), ctx.signal).catch((e: unknown) => {
    // A caller who left while queued never reached the model: its per-minute place is given back.
    if (ctx.signal.aborted) void svc.access.refundRequest(caller).catch(() => {});
    throw e;
  });
  let adapter: string | undefined;
  // The adapter stays loaded until the ticket is released, when the generation is over.
  if (fineTuned) ({ ticket, adapter } = await withAdapter(svc, caller, fineTuned, ticket, 'model'));
  let prep: PreparedRun;
  try {
    const engine = await svc.engine();
    prep = await prepareRun(engine, { specialist, messages: req.messages, output, sampling: req, params: CHAT_PARAMS, adapter });
  } catch (e) {
    ticket.release();
    throw e;
  }
  const head = { id: completionId(), created: Math.floor(svc.clock.now() / 1000), model: req.model };
  if (req.stream) return { kind: 'stream', events: streamChunks(svc, caller, ctx, req, name, prep, head, ticket) };

  const engine = prep.engine;
  let reservation: Reservation | undefined;
  let run: MeteredRun | undefined;
  try {
    reservation = await svc.access.reserve(caller, name);
    run = await MeteredRun.start(prep, reservation, ctx.signal, CHAT_PARAMS, ctx.record);
    const reader = outputReader(output);
    const deltas: Delta[] = [];
    const logprobs: TokenLogprob[] = [];
    const answerLogprobs: number[] = [];
    const chunks = run.chunks();
    let step = await chunks.next();
    for (; !step.done; step = await chunks.next()) {
      deltas.push(...reader.push(step.value.text));
      answerLogprobs.push(...step.value.logprobs);
      if (req.logprobs) logprobs.push(...tokenLogprobs(engine, step.value));
    }
    const result = step.value;
    const end = reader.end(result);
    deltas.push(...end.deltas);
    note(ctx, result);
    return {
      kind: 'json',
      status: 200,
      body: {
        ...head,
        object: 'chat.completion',
        choices: [
          {
            index: 0,
            message: assembleMessage(deltas),
            logprobs: req.logprobs ? { content: logprobs } : null,
            finish_reason: end.finishReason,
            ...confidence(prep, result.text, answerLogprobs),
          },
        ],
        usage: usageOf(result),
      },
    };
  } finally {
    await run?.close();
    await reservation?.release();
    ticket.release();
  }
}

async function* streamChunks(
  svc: ServiceParts,
  caller: Caller,
  ctx: RequestContext,
  req: ChatRequest,
  specialist: string,
  prep: PreparedRun,
  head: { id: string; created: number; model: string },
  ticket: Ticket,
): AsyncGenerator<object> {
  // Before the first event, so an exhausted allowance or an input the engine refuses still gets its own status.
  let reservation: Reservation;
  let run: MeteredRun;
  try {
    reservation = await svc.access.reserve(caller, specialist);
    try {
      run = await MeteredRun.start(prep, reservation, ctx.signal, CHAT_PARAMS, ctx.record);
    } catch (e) {
      await reservation.release();
      throw e;
    }
  } catch (e) {
    ticket.release();
    throw e;
  }
  const base = { ...head, object: 'chat.completion.chunk' };
  // With include_usage the provider sends `usage: null` on every chunk but the last.
  const extra = req.includeUsage ? { usage: null } : {};
  const chunk = (delta: object, logprobs: TokenLogprob[] | null, finishReason: string | null, more: object = {}) => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: req.logprobs ? { content: logprobs ?? [] } : null, finish_reason: finishReason, ...more }],
    ...extra,
  });
  try {
    yield chunk({ role: 'assistant', content: '' }, null, null);
    const reader = outputReader(prep.output);
    const answerLogprobs: number[] = [];
    const chunks = run.chunks();
    // Logprobs of tokens that produced no delta yet (half a UTF-8 character, a held-back `<tool_call>`) go with the next one.
    let pending: TokenLogprob[] = [];
    let step = await chunks.next();
    for (; !step.done; step = await chunks.next()) {
      answerLogprobs.push(...step.value.logprobs);
      if (req.logprobs) pending.push(...tokenLogprobs(prep.engine, step.value));
      for (const delta of reader.push(step.value.text)) {
        yield chunk(delta, pending, null);
        pending = [];
      }
    }
    const result = step.value;
    const end = reader.end(result);
    for (const delta of end.deltas) {
      yield chunk(delta, pending, null);
      pending = [];
    }
    note(ctx, result);
    yield chunk({}, pending, end.finishReason, confidence(prep, result.text, answerLogprobs));
    if (req.includeUsage) yield { ...base, choices: [], usage: usageOf(result) };
  } finally {
    // Stops and counts a generation the consumer left mid-way (a no-op once it has finished).
    await run.close();
    await reservation.release();
    ticket.release();
  }
}

/** Our extension on the choice, for outputs that report one (classify's label). */
function confidence(prep: PreparedRun, answer: string, logprobs: readonly number[]): { confidence?: number } {
  return reportsConfidence(prep.output, answer) ? { confidence: answerProbability(logprobs) } : {};
}

function usageOf(r: GenerationResult) {
  return {
    prompt_tokens: r.promptTokens,
    completion_tokens: r.completionTokens,
    total_tokens: r.promptTokens + r.completionTokens,
    // Prompt tokens the prefix cache served (OpenAI reports prompt caching here too).
    prompt_tokens_details: { cached_tokens: r.timings.cachedPromptTokens },
  };
}

function note(ctx: RequestContext, r: GenerationResult): void {
  ctx.record.promptTokens = r.promptTokens;
  ctx.record.completionTokens = r.completionTokens;
  ctx.record.finishReason = r.finishReason;
}
