/**
 * Incremental decoding for streamed generation. Each token's bytes are appended as they come (no
 * leading-space strip, no clean-up: that is how llama.cpp's server streams pieces), and a UTF-8
 * character split across tokens, as byte-fallback emoji are, is held back until it is whole.
 */
import type { StreamDecoder } from './types.ts';

export class Utf8StreamDecoder implements StreamDecoder {
  // A streaming TextDecoder keeps an incomplete trailing sequence and turns invalid bytes into U+FFFD.
  // ignoreBOM: a generated U+FEFF is text like any other, not a marker to drop.
  private decoder = new TextDecoder('utf-8', { ignoreBOM: true });

  constructor(private readonly bytesOf: (id: number) => Uint8Array) {}

  push(id: number): string {
    return this.decoder.decode(this.bytesOf(id), { stream: true });
  }

  flush(): string {
    // decode() without { stream } ends the stream: a held-back partial character becomes U+FFFD.
    return this.decoder.decode();
  }
}
