/**
 * Where `queue.submit` does the work on the calling thread (llvmpipe), a step is submitted in segments
 * of layers with a yield between them, so the thread's other work (HTTP, timers) waits for one segment
 * rather than a whole forward pass. Each yield costs some throughput (measured ~15% at one layer per
 * segment on SmolLM2-135M shapes, ~9% at five), so segments are sized to take about `targetMs` from
 * what the previous steps took per layer: a decode step of a small model is a few segments, a long
 * prefill chunk of a big one a layer each.
 */
export class SegmentPlanner {
  /** Per-layer milliseconds, per token where a step is a prefill chunk (cost grows with its tokens). */
  private decodeLayerMs: number | undefined;
  private prefillLayerTokenMs: number | undefined;

  constructor(
    readonly layers: number,
    /** Steps of at most this many tokens count as decode steps (their cost barely grows with tokens). */
    private readonly decodeTokens: number,
    targetMs: number | undefined = 16,
  ) {
    this.targetMs = targetMs ?? 16;
  }

  readonly targetMs: number;

  /** Layers per segment for a step of `tokens` tokens. */
  layersPerSegment(tokens: number): number {
    const perLayer = tokens <= this.decodeTokens ? this.decodeLayerMs : this.prefillLayerTokenMs && this.prefillLayerTokenMs * tokens;
    // Nothing measured yet: one layer per segment, the safe choice for the thread.
    if (perLayer === undefined || !(perLayer > 0) || this.targetMs <= 0) return 1;
    return Math.max(1, Math.min(this.layers, Math.floor(this.targetMs / perLayer)));
  }

  /** Record a step of `tokens` tokens that took `ms` from its first submit to its results. */
  observe(tokens: number, ms: number): void {
    if (!(ms > 0) || tokens < 1) return;
    const ema = (old: number | undefined, v: number) => (old === undefined ? v : 0.7 * old + 0.3 * v);
    if (tokens <= this.decodeTokens) this.decodeLayerMs = ema(this.decodeLayerMs, ms / this.layers);
    else this.prefillLayerTokenMs = ema(this.prefillLayerTokenMs, ms / this.layers / tokens);
  }
}
