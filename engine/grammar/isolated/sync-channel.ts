/**
 * The shared memory behind synchronous per-token calls into a grammar worker.
 *
 * Layout: an Int32 header (answered sequence number, status, flags, payload length) and a payload area
 * big enough for a token mask. The caller posts a request with a sequence number and sleeps in
 * Atomics.wait until the worker stores that number as answered, or the timeout passes. (Atomics.waitAsync
 * cannot serve the worker side: in Node its wake-ups are lost while the main thread is blocked.)
 */
const ANSWERED = 0;
const STATUS = 1;
const FLAGS = 2;
const LENGTH = 3;
const HEADER_BYTES = 64;
/** Room for error messages and forced-token lists beside the largest mask. */
const EXTRA_BYTES = 64 * 1024;

export const STATUS_OK = 0;
export const STATUS_ERROR = 1;

/** Shared memory where the platform has it (Node; cross-origin-isolated pages), else a plain buffer that only jobs use. */
export function channelBuffer(maskWords: number): SharedArrayBuffer {
  const bytes = HEADER_BYTES + Math.max(maskWords * 4, 0) + EXTRA_BYTES;
  return typeof SharedArrayBuffer === 'function' ? new SharedArrayBuffer(bytes) : (new ArrayBuffer(bytes) as unknown as SharedArrayBuffer);
}

export interface Answer {
  status: number;
  flags: number;
  payload: Uint8Array;
}

export class ChannelTimeout extends Error {}

/** The caller's side (main thread). */
export class ChannelCaller {
  private readonly header: Int32Array;
  private readonly payload: Uint8Array;
  private seq = 0;

  constructor(buffer: SharedArrayBuffer) {
    this.header = new Int32Array(buffer, 0, HEADER_BYTES / 4);
    this.payload = new Uint8Array(buffer, HEADER_BYTES);
  }

  /** The next sequence number; send the request carrying it, then call wait(). */
  next(): number {
    this.seq = (this.seq + 1) | 0 || 1;
    return this.seq;
  }

  /** Whether the worker has answered `seq` (for a call that timed out: has it finished since?). */
  answered(seq: number): boolean {
    return Atomics.load(this.header, ANSWERED) === seq;
  }

  /** Block until the worker answers `seq`, or throw ChannelTimeout after `timeoutMs`. */
  wait(seq: number, timeoutMs: number): Answer {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const answered = Atomics.load(this.header, ANSWERED);
      if (answered === seq) break;
      const left = deadline - performance.now();
      if (left <= 0) throw new ChannelTimeout(`no answer within ${timeoutMs} ms`);
      Atomics.wait(this.header, ANSWERED, answered, left);
    }
    const length = this.header[LENGTH];
    return { status: this.header[STATUS], flags: this.header[FLAGS], payload: this.payload.subarray(0, length) };
  }
}

/** The worker's side. */
export class ChannelAnswerer {
  private readonly header: Int32Array;
  readonly payload: Uint8Array;

  constructor(buffer: SharedArrayBuffer) {
    this.header = new Int32Array(buffer, 0, HEADER_BYTES / 4);
    this.payload = new Uint8Array(buffer, HEADER_BYTES);
  }

  /** Publish the answer to `seq`: `length` bytes of payload were written already. */
  answer(seq: number, status: number, flags: number, length: number): void {
    this.header[STATUS] = status;
    this.header[FLAGS] = flags;
    this.header[LENGTH] = length;
    Atomics.store(this.header, ANSWERED, seq);
    Atomics.notify(this.header, ANSWERED);
  }
}
