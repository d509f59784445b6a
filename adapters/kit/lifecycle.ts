/**
 * What every transport does around a service call, written once: tracking the requests in flight so a
 * shutdown can drain them (and abort the stragglers with an interruption the protocol reports), and
 * driving a streamed outcome (commit only once the first event is there, so a failure up to then still
 * gets its own status; map a later failure to the error the stream ends with; always stop the
 * generation when the stream ends, early or not). The HTTP, WebSocket and in-process adapters keep only
 * their framing.
 */
import type { Outcome, RequestContext } from '../../protocol/context.ts';
import { interrupted, type ApiError } from '../../protocol/errors.ts';
import type { Logger } from '../../protocol/logger.ts';
import type { Service } from '../../protocol/service.ts';

/** The requests a transport has in progress, each with the controller that stops its generation. */
export class InFlight {
  private readonly controllers = new Set<AbortController>();
  private onIdle: (() => void) | undefined;

  get size(): number {
    return this.controllers.size;
  }

  /** A controller for a new request; `done()` when the request is over (idempotent). */
  begin(): { controller: AbortController; done: () => void } {
    const controller = new AbortController();
    this.controllers.add(controller);
    let finished = false;
    return {
      controller,
      done: () => {
        if (finished) return;
        finished = true;
        this.controllers.delete(controller);
        if (this.controllers.size === 0) this.onIdle?.();
      },
    };
  }

  /**
   * Waits for every request in progress to finish, up to `graceMs`; then aborts the rest with an
   * interruption (the protocol answers with it rather than with a cut-off answer) and gives them 2 s.
   */
  async drain(graceMs: number, logger: Logger, what: string): Promise<void> {
    if (this.controllers.size === 0) return;
    logger.info({ inFlight: this.controllers.size, graceMs, transport: what }, 'draining');
    const idle = new Promise<void>((resolve) => (this.onIdle = resolve));
    const timedOut = await Promise.race([idle.then(() => false), sleep(graceMs).then(() => true)]);
    if (!timedOut) return;
    logger.warn({ inFlight: this.controllers.size, transport: what }, 'drain timed out; aborting the remaining requests');
    const reason = interrupted(`the server is shutting down and its drain deadline of ${formatSeconds(graceMs)} passed`);
    for (const c of this.controllers) c.abort(reason);
    await Promise.race([idle, sleep(2000)]);
  }
}

/** A failure as the transport answers it: status, the provider's error body, and the error (for headers). */
export type Failure = Outcome & { kind: 'json'; error: ApiError };

export interface StreamSink {
  /** The stream failed before its first event: answer with this status and body. */
  refuse(f: Failure): void;
  /** The first event is there: commit to a stream (e.g. send the 200 and the SSE headers). */
  open(): void;
  /** One event; resolve false to stop (the client is gone or too slow). */
  send(event: object): boolean | Promise<boolean>;
  /** Every event was sent. */
  end(): void;
  /** The stream failed after its first event: end it with this error. */
  fail(f: Failure): void;
}

/** Drives a streamed outcome into a transport's sink; returns how it ended (for the access log). */
export async function pumpStream(service: Service, outcome: Outcome & { kind: 'stream' }, ctx: Pick<RequestContext, 'logger' | 'signal'>, sink: StreamSink): Promise<'done' | 'refused' | 'failed' | 'stopped'> {
  const events = outcome.events[Symbol.asyncIterator]();
  let step: IteratorResult<object>;
  try {
    step = await events.next();
  } catch (e) {
    sink.refuse(service.failure(e, ctx, outcome.rateLimit));
    await events.return?.();
    return 'refused';
  }
  try {
    sink.open();
    while (!step.done) {
      if (!(await sink.send(step.value))) return 'stopped';
      step = await events.next();
    }
    sink.end();
    return 'done';
  } catch (e) {
    sink.fail(service.failure(e, ctx, outcome.rateLimit));
    return 'failed';
  } finally {
    // Stops (and counts) a generation the client left; a no-op when the stream has ended.
    await events.return?.();
  }
}

/** A timer that does not keep the process alive. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms) as unknown as { unref?: () => void };
    t.unref?.();
  });
}

function formatSeconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}
