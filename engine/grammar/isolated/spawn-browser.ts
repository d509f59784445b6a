/**
 * Grammar workers as browser Workers running a bundle of worker-browser.ts served at `url`.
 *
 * A page's main thread may not block (no Atomics.wait), so there the matchers stay on the page and only
 * compiling goes through the sandbox: use IsolatedGrammars with `serving: 'in-process'`. Code that runs
 * in a dedicated worker of a cross-origin-isolated page can use the default serving worker too.
 */
import type { WorkerInit } from './messages.ts';
import type { GrammarWorkerLike, SpawnGrammarWorker } from './worker-handle.ts';

export function browserGrammarWorkers(url: string | URL): SpawnGrammarWorker {
  return (init: WorkerInit): GrammarWorkerLike => {
    const w = new Worker(url, { type: 'module', name: 'svc-grammar' });
    let ended = false;
    w.postMessage(init);
    return {
      postMessage: (m) => w.postMessage(m),
      onMessage: (h) => w.addEventListener('message', (e) => h(e.data)),
      onExit: (h) => {
        w.addEventListener('error', (e) => {
          if (!ended) h(`error: ${e.message || 'the worker script failed'}`);
          ended = true;
        });
      },
      terminate: () => {
        ended = true;
        w.terminate();
      },
    };
  };
}
