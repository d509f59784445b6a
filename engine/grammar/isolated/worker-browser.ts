/**
 * The grammar worker's entry in browsers (a module Worker; bundle it as its own file). The first message
 * is the WorkerInit (browsers have no workerData); everything after it is served like in Node.
 */
import type { WorkerInit, WorkerMessage } from './messages.ts';
import { capWasmMemory, serveGrammarWorker } from './worker-core.ts';

interface WorkerScope {
  onmessage: ((e: MessageEvent) => void) | null;
  postMessage(message: unknown): void;
}

const scope = globalThis as unknown as WorkerScope;
let started = false;
const early: WorkerMessage[] = [];
let deliver: ((m: WorkerMessage) => void) | undefined;

scope.onmessage = (e: MessageEvent) => {
  if (!started) {
    started = true;
    const init = e.data as WorkerInit;
    capWasmMemory(init.memoryBytes);
    serveGrammarWorker(init, {
      post: (m) => scope.postMessage(m),
      onMessage: (handler) => {
        deliver = handler;
        for (const m of early.splice(0)) handler(m);
      },
    }).catch((err: unknown) => scope.postMessage({ kind: 'failed', message: err instanceof Error ? err.message : String(err) }));
    return;
  }
  const m = e.data as WorkerMessage;
  if (deliver) deliver(m);
  else early.push(m);
};
