/**
 * Generated text in the tool-call wire format (engine/grammar/tool-format.ts) read as it streams:
 * message text, and for each call its name once known and then its arguments piece by piece, which is
 * what the provider's streamed `delta.tool_calls` need. Whole answers are read the same way, so a
 * stream and a whole answer always agree.
 *
 *     <tool_call>
 *     {"name": "get_weather", "arguments": {"city": "Paris"}}
 *     </tool_call>
 *
 * The grammar guarantees the format; `arguments` is the generated JSON text as it is (valid JSON).
 * Whitespace around calls and at the ends of the text is not part of the message content.
 */
import { TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from '../../engine/grammar/index.ts';

export type ToolEvent = { type: 'content'; text: string } | { type: 'call'; index: number; name: string } | { type: 'arguments'; index: number; text: string };

const HEADER = /^\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"arguments"\s*:\s*/;

export class ToolCallReader {
  private buf = '';
  private state: 'text' | 'header' | 'arguments' | 'closing' = 'text';
  private calls = 0;
  /** Content whitespace held back: it is dropped before a call and at the end. */
  private space = '';
  private contentStarted = false;
  // JSON scanning of the arguments object.
  private depth = 0;
  private inString = false;
  private escaped = false;

  /** Calls started so far. */
  get callCount(): number {
    return this.calls;
  }

  push(text: string): ToolEvent[] {
    this.buf += text;
    const out: ToolEvent[] = [];
    for (let progress = true; progress; ) progress = this.step(out);
    return out;
  }

  /** The text has ended; `cutOff` when it ended inside a call. */
  end(): { events: ToolEvent[]; cutOff: boolean } {
    const events: ToolEvent[] = [];
    if (this.state === 'text') {
      // A held-back possible start of `<tool_call>` that never became one is text.
      this.content(this.buf, events);
      this.buf = '';
    }
    return { events, cutOff: this.state !== 'text' };
  }

  private step(out: ToolEvent[]): boolean {
    switch (this.state) {
      case 'text': {
        const open = this.buf.indexOf(TOOL_CALL_OPEN);
        if (open < 0) {
          const keep = partialSuffix(this.buf, TOOL_CALL_OPEN);
          this.content(this.buf.slice(0, this.buf.length - keep), out);
          this.buf = this.buf.slice(this.buf.length - keep);
          return false;
        }
        this.content(this.buf.slice(0, open), out);
        this.space = '';
        this.buf = this.buf.slice(open + TOOL_CALL_OPEN.length);
        this.state = 'header';
        return true;
      }
      case 'header': {
        const m = HEADER.exec(this.buf);
        // Wait for the whole header (the name is complete once `"arguments":` follows it).
        if (!m || m[0].length === this.buf.length) return false;
        out.push({ type: 'call', index: this.calls, name: JSON.parse(`"${m[1]}"`) as string });
        this.buf = this.buf.slice(m[0].length);
        this.state = 'arguments';
        this.depth = 0;
        this.inString = false;
        this.escaped = false;
        return true;
      }
      case 'arguments': {
        const end = this.scanArguments();
        const piece = this.buf.slice(0, end ?? this.buf.length);
        if (piece) out.push({ type: 'arguments', index: this.calls, text: piece });
        this.buf = this.buf.slice(piece.length);
        if (end === undefined) return false;
        this.calls++;
        this.state = 'closing';
        return true;
      }
      case 'closing': {
        const close = this.buf.indexOf(TOOL_CALL_CLOSE);
        if (close < 0) return false;
        this.buf = this.buf.slice(close + TOOL_CALL_CLOSE.length);
        this.state = 'text';
        return true;
      }
    }
  }

  /** Where the arguments object ends in `buf` (index after its closing brace), or undefined if not yet. */
  private scanArguments(): number | undefined {
    const b = this.buf;
    for (let i = 0; i < b.length; i++) {
      const c = b[i];
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === '\\') this.escaped = true;
        else if (c === '"') this.inString = false;
      } else if (c === '"') this.inString = true;
      else if (c === '{' || c === '[') this.depth++;
      else if (c === '}' || c === ']') {
        this.depth--;
        if (this.depth === 0) return i + 1;
      }
    }
    return undefined;
  }

  private content(text: string, out: ToolEvent[]): void {
    if (!text) return;
    let t = this.space + text;
    if (!this.contentStarted) t = t.trimStart();
    const trailing = /\s*$/.exec(t)![0];
    this.space = trailing;
    t = t.slice(0, t.length - trailing.length);
    if (!t) return;
    this.contentStarted = true;
    out.push({ type: 'content', text: t });
  }
}

/** Length of the longest end of `s` that is a proper start of `marker`. */
function partialSuffix(s: string, marker: string): number {
  for (let n = Math.min(s.length, marker.length - 1); n > 0; n--) if (marker.startsWith(s.slice(s.length - n))) return n;
  return 0;
}
