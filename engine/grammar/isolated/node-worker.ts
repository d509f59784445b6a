/** A Node worker_threads Worker as the grammar worker handle: shared by the repo's spawner and the GPU-host bundle's. */
import type { Worker, WorkerOptions } from 'node:worker_threads';
import type { GrammarWorkerLike } from './worker-handle.ts';

/** The JS heap of a worker holds little (the grammar's text, our BFS); wasm memory is capped apart. */
export const GRAMMAR_WORKER_OPTIONS: WorkerOptions = { resourceLimits: { maxOldGenerationSizeMb: 256 }, stdout: false, stderr: false };

export function nodeWorkerHandle(w: Worker): GrammarWorkerLike {
  w.unref();
  let exited = false;
  return {
    postMessage: (m) => w.postMessage(m),
    onMessage: (h) => w.on('message', h),
    onExit: (h) => {
      w.on('error', (e) => {
        if (!exited) h(`error: ${e.message}`);
        exited = true;
      });
      w.on('exit', (code) => {
        if (!exited) h(`exited with code ${code}`);
        exited = true;
      });
    },
    terminate: () => {
      exited = true;
      void w.terminate();
    },
  };
}
