/** `POST /v1/infer`: one prompt to one specialist, answered whole; with memory, one turn of a conversation. */
import type { ChatMessage } from '../../engine/chat/index.ts';
import type { Caller, Reservation } from '../access.ts';
import { applicantFor } from '../admission.ts';
import type { Outcome, RequestContext, ServiceParts } from '../context.ts';
import { MAX_STORED_TURNS } from '../conversations.ts';
import { invalidRequest, modelNotFound } from '../errors.ts';
import { answerProbability, INFER_PARAMS, MeteredRun, prepareRun } from '../generation.ts';
import { guardrailPlan } from '../guardrails/plan.ts';
import { inferenceId } from '../ids.ts';
import { fineTunedModelFor, withAdapter } from '../fine-tuning/serving.ts';
import { isFineTunedModelName, MODEL_PREFIX } from '../model-names.ts';
import { reportsConfidence } from '../output/plan.ts';
import { parseInferRequest } from '../requests/infer.ts';

export async function infer(svc: ServiceParts, caller: Caller, ctx: RequestContext): Promise<Outcome> {
  const started = svc.clock.now();
  await svc.access.takeRequest(caller);
  const req = parseInferRequest(await ctx.readBody());
  const fineTuned = req.model === undefined ? undefined : await inferModel(svc, caller, req.model);
  // The spec names bare specialists here; the model-style `svc-` form is accepted too.
  const asked = req.specialist ?? fineTuned!.specialist;
  const name = asked.startsWith(MODEL_PREFIX) ? asked.slice(MODEL_PREFIX.length) : asked;
  const specialist = svc.specialists.get(name);
  if (!specialist) throw modelNotFound(asked, 'specialist');
  if (fineTuned && fineTuned.specialist !== name) {
    throw invalidRequest(`The model ${fineTuned.name} is fine-tuned from the '${fineTuned.specialist}' specialist, not '${name}'; leave 'specialist' out or make it '${fineTuned.specialist}'.`, 'specialist');
  }
  ctx.record.specialist = name;
  svc.access.requireSpecialist(caller, name, 'specialist');
  if (req.conversationId !== undefined && !specialist.memory) {
    throw invalidRequest(`'conversation_id' applies only to specialists with memory (such as 'chat'); '${name}' answers each prompt on its own.`, 'conversation_id');
  }
  const messages: ChatMessage[] = [{ role: 'user', content: req.prompt }];
  const output = guardrailPlan(specialist, req.output, messages);
  for (const f of output.features) svc.access.requireFeature(caller, f.feature, f.param);
  await svc.access.requireQuota(caller);

  // A place among the running generations before any work on the prompt, so overload costs nothing more.
  let ticket = await svc.admission.admit(applicantFor(caller), ctx.signal).catch((e: unknown) => {
    // A caller who left while queued never reached the model: its per-minute place is given back.
    if (ctx.signal.aborted) void svc.access.refundRequest(caller).catch(() => {});
    throw e;
  });
  let adapter: string | undefined;
  if (fineTuned) ({ ticket, adapter } = await withAdapter(svc, caller, fineTuned, ticket, 'model'));
  const conversation = req.conversationId;
  let reservation: Reservation | undefined;
  let run: MeteredRun | undefined;
  try {
    const history = conversation === undefined ? undefined : await svc.store.conversationTurns(caller.key.id, conversation, MAX_STORED_TURNS);
    const engine = await svc.engine();
    const prep = await prepareRun(engine, { specialist, messages, history, output, sampling: req, params: INFER_PARAMS, adapter });
    reservation = await svc.access.reserve(caller, name);
    run = await MeteredRun.start(prep, reservation, ctx.signal, INFER_PARAMS, ctx.record);
    const logprobs: number[] = [];
    const chunks = run.chunks();
    let step = await chunks.next();
    for (; !step.done; step = await chunks.next()) logprobs.push(...step.value.logprobs);
    const result = step.value;
    const text = result.text + (output.closing?.complete(result.text) ?? '');
    ctx.record.promptTokens = result.promptTokens;
    ctx.record.completionTokens = result.completionTokens;
    ctx.record.finishReason = result.finishReason;
    // Only a complete answer reaches memory: an interrupted one has thrown before this point.
    if (conversation !== undefined) {
      await svc.store.appendTurns(caller.key.id, conversation, [{ role: 'user', content: req.prompt }, { role: 'assistant', content: text }], svc.clock.now(), MAX_STORED_TURNS);
    }
    return {
      kind: 'json',
      status: 200,
      body: {
        id: inferenceId(),
        specialist: name,
        result: text,
        tokens_used: result.promptTokens + result.completionTokens,
        latency_ms: Math.max(0, Math.round(svc.clock.now() - started)),
        finish_reason: result.finishReason,
        ...(reportsConfidence(output, text) ? { confidence: answerProbability(logprobs) } : {}),
        ...(conversation !== undefined ? { conversation_id: conversation, history_turns: prep.historyUsed } : {}),
      },
    };
  } finally {
    await run?.close();
    await reservation?.release();
    ticket.release();
  }
}

/** `model` on /v1/infer names a fine-tuned model; any other name is not one of the caller's models. */
async function inferModel(svc: ServiceParts, caller: Caller, model: string) {
  if (!isFineTunedModelName(model)) {
    throw invalidRequest(`'model' on /v1/infer names a fine-tuned model (ft:svc-<specialist>:…); for a specialist use 'specialist', got ${JSON.stringify(model.slice(0, 64))}.`, 'model');
  }
  return fineTunedModelFor(svc, caller, model, 'model');
}
