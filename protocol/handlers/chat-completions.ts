/** `POST /v1/chat/completions`: the provider's chat completion, whole or streamed as `chat.completion.chunk`s. */
import type { GenerationResult } from '../../engine/types.ts';
import type { Caller } from '../access.ts';
import type { Outcome, RequestContext, ServiceParts } from '../context.ts';
import { invalidRequest, modelNotFound } from '../errors.ts';
import { CHAT_PARAMS, MeteredRun, prepareRun, tokenLogprobs, type PreparedRun, type TokenLogprob } from '../generation.ts';
import { completionId } from '../ids.ts';
import { specialistForModel } from '../model-names.ts';
import { parseChatRequest, type ChatRequest } from '../requests/chat.ts';

export async function chatCompletions(svc: ServiceParts, caller: Caller, ctx: RequestContext): Promise<Outcome> {
  svc.access.takeRequest(caller);
  const body = await ctx.readBody();
  const req = parseChatRequest(body);
  ctx.record.model = req.model;
  ctx.record.stream = req.stream;

  const name = specialistForModel(req.model, (n) => svc.specialists.has(n));
  if (!name) throw modelNotFound(req.model);
  ctx.record.specialist = name;
  svc.access.requireSpecialist(caller, name, 'model');
  for (const f of req.features) svc.access.requireFeature(caller, f.feature, f.param);
  const [unsupported] = req.unsupported;
  if (unsupported) throw invalidRequest(unsupported.message, unsupported.param, 'unsupported_parameter');
  svc.access.requireQuota(caller);

  const engine = await svc.engine();
  const prep = prepareRun(engine, svc.specialists.get(name)!, req.messages, req, CHAT_PARAMS);
  const head = { id: completionId(), created: Math.floor(svc.clock.now() / 1000), model: req.model };
  if (req.stream) return { kind: 'stream', events: streamChunks(svc, caller, ctx, req, name, prep, head) };

  const reservation = svc.access.reserve(caller, name);
  let run: MeteredRun | undefined;
  try {
    run = new MeteredRun(prep, reservation, ctx.signal, CHAT_PARAMS);
    const chunks = run.chunks();
    const logprobs: TokenLogprob[] = [];
    let step = await chunks.next();
    for (; !step.done; step = await chunks.next()) if (req.logprobs) logprobs.push(...tokenLogprobs(engine, step.value));
    const result = step.value;
    note(ctx, result);
    return {
      kind: 'json',
      status: 200,
      body: {
        ...head,
        object: 'chat.completion',
        choices: [
          { index: 0, message: { role: 'assistant', content: result.text }, logprobs: req.logprobs ? { content: logprobs } : null, finish_reason: result.finishReason },
        ],
        usage: usageOf(result),
      },
    };
  } finally {
    run?.close();
    reservation.release();
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
): AsyncGenerator<object> {
  // Before the first event, so an exhausted allowance or an input the engine refuses still gets its own status.
  const reservation = svc.access.reserve(caller, specialist);
  let run: MeteredRun;
  try {
    run = new MeteredRun(prep, reservation, ctx.signal, CHAT_PARAMS);
  } catch (e) {
    reservation.release();
    throw e;
  }
  const base = { ...head, object: 'chat.completion.chunk' };
  // With include_usage the provider sends `usage: null` on every chunk but the last.
  const extra = req.includeUsage ? { usage: null } : {};
  const chunk = (delta: object, logprobs: TokenLogprob[] | null, finishReason: string | null) => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: req.logprobs ? { content: logprobs ?? [] } : null, finish_reason: finishReason }],
    ...extra,
  });
  try {
    yield chunk({ role: 'assistant', content: '' }, null, null);
    const chunks = run.chunks();
    let pending: TokenLogprob[] = [];
    let step = await chunks.next();
    for (; !step.done; step = await chunks.next()) {
      if (req.logprobs) pending.push(...tokenLogprobs(prep.engine, step.value));
      // A token that ends inside a UTF-8 character has no text yet; it goes out with the next one.
      if (!step.value.text) continue;
      yield chunk({ content: step.value.text }, pending, null);
      pending = [];
    }
    const result = step.value;
    note(ctx, result);
    yield chunk({}, pending, result.finishReason);
    if (req.includeUsage) yield { ...base, choices: [], usage: usageOf(result) };
  } finally {
    // Stops and counts a generation the consumer left mid-way (a no-op once it has finished).
    run.close();
    reservation.release();
  }
}

function usageOf(r: GenerationResult) {
  return { prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, total_tokens: r.promptTokens + r.completionTokens };
}

function note(ctx: RequestContext, r: GenerationResult): void {
  ctx.record.promptTokens = r.promptTokens;
  ctx.record.completionTokens = r.completionTokens;
  ctx.record.finishReason = r.finishReason;
}
