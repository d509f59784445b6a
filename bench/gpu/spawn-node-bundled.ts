/**
 * Grammar workers inside the GPU-host bundle (bench/gpu/bundle.ts): the same worker_threads setup as
 * engine/grammar/isolated/spawn-node.ts, but the worker is the bundled `grammar-worker.mjs` beside the
 * bench bundle, run as plain JavaScript (no TypeScript loader on that host). The bundler puts this file in
 * place of spawn-node.ts; the engine itself is unchanged.
 */
import { Worker } from 'node:worker_threads';
import type { WorkerInit } from '../../engine/grammar/isolated/messages.ts';
import type { GrammarWorkerLike, SpawnGrammarWorker } from '../../engine/grammar/isolated/worker-handle.ts';

const ENTRY = new URL('./grammar-worker.mjs', import.meta.url);

export const spawnNodeGrammarWorker: SpawnGrammarWorker = (init: WorkerInit): GrammarWorkerLike => {
  const w = new Worker(ENTRY, { workerData: init, resourceLimits: { maxOldGenerationSizeMb: 256 }, stdout: false, stderr: false });
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
};
