/**
 * What a transport reports when a request is over, for whoever watches (adapters/metrics): one shape
 * for HTTP, WebSocket and the in-process client, so every transport is counted alike.
 */
import type { RequestRecord } from '../../protocol/context.ts';

export type Transport = 'http' | 'ws' | 'in-process';

export interface FinishedRequest {
  transport: Transport;
  /** The route's operation (`chat.completions`, `usage`, …), or `unknown` for a path no route takes. */
  endpoint: string;
  status: number;
  /** performance.now() when the request arrived. */
  startedAt: number;
  record: RequestRecord;
}

export type RequestObserver = (f: FinishedRequest) => void;

/**
 * Whether this replica should get traffic: false while the model loads and while it drains (a load
 * balancer's readiness probe), unlike /health, which says the process is alive.
 */
export class Readiness {
  private loaded = false;
  private draining = false;

  modelLoaded(): void {
    this.loaded = true;
  }

  drain(): void {
    this.draining = true;
  }

  get state(): { ready: boolean; reason: string | null } {
    if (this.draining) return { ready: false, reason: 'draining' };
    if (!this.loaded) return { ready: false, reason: 'loading the model' };
    return { ready: true, reason: null };
  }
}
