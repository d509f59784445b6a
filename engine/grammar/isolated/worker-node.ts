/**
 * The grammar worker's entry in Node (worker_threads). Caps the wasm heap before xgrammar loads, then
 * serves jobs and per-token calls from the main thread.
 */
import { parentPort, workerData } from 'node:worker_threads';
import '../xgrammar-node.ts';
import type { WorkerInit, WorkerMessage } from './messages.ts';
import { capWasmMemory, serveGrammarWorker } from './worker-core.ts';

const init = workerData as WorkerInit;
const port = parentPort!;
capWasmMemory(init.memoryBytes);
// Messages that arrive while the runtime loads wait here, in order.
const early: WorkerMessage[] = [];
let deliver: ((m: WorkerMessage) => void) | undefined;
port.on('message', (m: WorkerMessage) => (deliver ? deliver(m) : early.push(m)));
serveGrammarWorker(init, {
  post: (m) => port.postMessage(m),
  onMessage: (handler) => {
    deliver = handler;
    for (const m of early.splice(0)) handler(m);
  },
}).catch((e: unknown) => {
  port.postMessage({ kind: 'failed', message: e instanceof Error ? e.message : String(e) });
});
