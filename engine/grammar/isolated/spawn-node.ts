/** Grammar workers as Node worker_threads running worker-node.ts through the repo's TypeScript loader. */
import { Worker } from 'node:worker_threads';
import type { WorkerInit } from './messages.ts';
import { GRAMMAR_WORKER_OPTIONS, nodeWorkerHandle } from './node-worker.ts';
import type { GrammarWorkerLike, SpawnGrammarWorker } from './worker-handle.ts';

const ENTRY = new URL('./worker-node.ts', import.meta.url);
const REGISTER = new URL('../../../bin/register.mjs', import.meta.url).href;

export const spawnNodeGrammarWorker: SpawnGrammarWorker = (init: WorkerInit): GrammarWorkerLike =>
  nodeWorkerHandle(new Worker(ENTRY, { ...GRAMMAR_WORKER_OPTIONS, workerData: init, execArgv: ['--import', REGISTER] }));
