/**
 * Finds stop strings in streamed text. Text that could still turn out to be the start of a stop string is
 * held back, so a client never sees part of a stop sequence that then gets cut.
 */
export class StopMatcher {
  private held = '';
  private readonly longest: number;

  constructor(private readonly stops: readonly string[]) {
    this.longest = stops.reduce((m, s) => Math.max(m, s.length), 0);
  }

  /** Feed new text; returns what can be emitted and whether a stop string was completed. */
  push(text: string): { emit: string; stopped: boolean } {
    if (this.stops.length === 0) return { emit: text, stopped: false };
    this.held += text;
    let cut = -1;
    for (const s of this.stops) {
      const i = this.held.indexOf(s);
      if (i >= 0 && (cut < 0 || i < cut)) cut = i;
    }
    if (cut >= 0) {
      const emit = this.held.slice(0, cut);
      this.held = '';
      return { emit, stopped: true };
    }
    // Keep the longest tail that is a proper prefix of some stop string.
    let keep = 0;
    for (let n = Math.min(this.longest - 1, this.held.length); n > 0; n--) {
      const tail = this.held.slice(this.held.length - n);
      if (this.stops.some((s) => s.startsWith(tail))) {
        keep = n;
        break;
      }
    }
    const emit = this.held.slice(0, this.held.length - keep);
    this.held = this.held.slice(this.held.length - keep);
    return { emit, stopped: false };
  }

  /** At the end of generation, whatever was held back is real output. */
  flush(): string {
    const out = this.held;
    this.held = '';
    return out;
  }
}
