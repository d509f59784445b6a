/** `GET /health`: public liveness with the running version. */
import type { Outcome, ServiceParts } from '../context.ts';
import { json } from '../context.ts';

export function health(svc: ServiceParts): Outcome {
  return json({ status: 'ok', version: svc.version, uptime_seconds: Math.max(0, Math.floor((svc.clock.now() - svc.startedAt) / 1000)) });
}
