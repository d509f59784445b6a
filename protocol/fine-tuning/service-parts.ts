/** What the fine-tuning endpoints and the model-serving handlers get from the service. */
import type { AdapterCache } from './adapter-cache.ts';
import type { FineTuningStore } from './records.ts';
import type { JobRunner } from './runner.ts';

export interface FineTuning {
  store: FineTuningStore;
  /** Absent on a server without a trainer: jobs are accepted and wait for a replica that has one. */
  runner?: JobRunner;
  /** Absent on a server without a trainer: fine-tuned models cannot be served (503). */
  adapters?: AdapterCache;
}
