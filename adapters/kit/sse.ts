/** Server-Sent Events as the provider streams them: `data: <json>` events, `data: [DONE]` at the end (HTTP and the service worker). */
import type { Headers } from './answer-headers.ts';

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
