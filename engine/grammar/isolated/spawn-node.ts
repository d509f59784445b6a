/** Grammar workers as Node worker_threads running worker-node.ts through the repo's TypeScript loader. */
import { Worker } from 'node:worker_threads';
import type { WorkerInit } from './messages.ts';
import type { GrammarWorkerLike, SpawnGrammarWorker } from './worker-handle.ts';

const ENTRY = new URL('./worker-node.ts', import.meta.url);
const REGISTER = new URL('../../../bin/register.mjs', import.meta.url).href;

export const spawnNodeGrammarWorker: SpawnGrammarWorker = (init: WorkerInit): GrammarWorkerLike => {
  const w = new Worker(ENTRY, {
    workerData: init,
    execArgv: ['--import', REGISTER],
    // The JS heap of a worker holds little (the grammar's text, our BFS); wasm memory is capped apart.
    resourceLimits: { maxOldGenerationSizeMb: 256 },
    stdout: false,
    stderr: false,
  });
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
