/** Writing Server-Sent Events to a node:http response, with backpressure (the format is in adapters/kit/sse.ts). */
import type { ServerResponse } from 'node:http';
import { sseEvent } from '../kit/sse.ts';

/** Writes one event now; waits while the client is slow to read. False once the client has gone. */
export function writeEvent(res: ServerResponse, data: unknown): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return Promise.resolve(false);
  if (res.write(sseEvent(data))) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    res.on('drain', onDrain);
    res.on('close', onClose);
  });
}
