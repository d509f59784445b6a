/** Server-Sent Events as the provider streams them: `data: <json>` events, `data: [DONE]` at the end. */
import type { ServerResponse } from 'node:http';
import type { Headers } from '../kit/answer-headers.ts';

export const SSE_HEADERS: Headers = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  // Proxies such as nginx would otherwise hold events back.
  'x-accel-buffering': 'no',
};

export function sseEvent(data: unknown): string {
  return `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
}

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
