/** `POST /v1/infer`: one prompt to one specialist, answered whole. */
import type { Caller } from '../access.ts';
import type { Outcome, RequestContext, ServiceParts } from '../context.ts';
import { modelNotFound } from '../errors.ts';
import { INFER_PARAMS, MeteredRun, prepareRun } from '../generation.ts';
import { inferenceId } from '../ids.ts';
import { MODEL_PREFIX } from '../model-names.ts';
import { parseInferRequest } from '../requests/infer.ts';

export async function infer(svc: ServiceParts, caller: Caller, ctx: RequestContext): Promise<Outcome> {
  const started = svc.clock.now();
  svc.access.takeRequest(caller);
  const req = parseInferRequest(await ctx.readBody());
  // The spec names bare specialists here; the model-style `svc-` form is accepted too.
  const name = req.specialist.startsWith(MODEL_PREFIX) ? req.specialist.slice(MODEL_PREFIX.length) : req.specialist;
  const specialist = svc.specialists.get(name);
  if (!specialist) throw modelNotFound(req.specialist, 'specialist');
  ctx.record.specialist = name;
  svc.access.requireSpecialist(caller, name, 'specialist');
  svc.access.requireQuota(caller);

  const engine = await svc.engine();
  const prep = prepareRun(engine, specialist, [{ role: 'user', content: req.prompt }], req, INFER_PARAMS);
  const reservation = svc.access.reserve(caller, name);
  let run: MeteredRun | undefined;
  try {
    run = new MeteredRun(prep, reservation, ctx.signal, INFER_PARAMS);
    const chunks = run.chunks();
    let step = await chunks.next();
    while (!step.done) step = await chunks.next();
    const result = step.value;
    ctx.record.promptTokens = result.promptTokens;
    ctx.record.completionTokens = result.completionTokens;
    ctx.record.finishReason = result.finishReason;
    return {
      kind: 'json',
      status: 200,
      body: {
        id: inferenceId(),
        specialist: name,
        result: result.text,
        tokens_used: result.promptTokens + result.completionTokens,
        latency_ms: Math.max(0, Math.round(svc.clock.now() - started)),
        finish_reason: result.finishReason,
      },
    };
  } finally {
    run?.close();
    reservation.release();
  }
}
