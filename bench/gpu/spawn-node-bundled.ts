/**
 * Grammar workers inside the GPU-host bundle (bench/gpu/bundle.ts): the same worker_threads setup as
 * engine/grammar/isolated/spawn-node.ts, but the worker is the bundled `grammar-worker.mjs` beside the
 * bench bundle, run as plain JavaScript (no TypeScript loader on that host). The bundler puts this file in
 * place of spawn-node.ts; the engine itself is unchanged.
 */
import { Worker } from 'node:worker_threads';
import type { WorkerInit } from '../../engine/grammar/isolated/messages.ts';
import { GRAMMAR_WORKER_OPTIONS, nodeWorkerHandle } from '../../engine/grammar/isolated/node-worker.ts';
import type { GrammarWorkerLike, SpawnGrammarWorker } from '../../engine/grammar/isolated/worker-handle.ts';

const ENTRY = new URL('./grammar-worker.mjs', import.meta.url);

export const spawnNodeGrammarWorker: SpawnGrammarWorker = (init: WorkerInit): GrammarWorkerLike =>
  nodeWorkerHandle(new Worker(ENTRY, { ...GRAMMAR_WORKER_OPTIONS, workerData: init }));
