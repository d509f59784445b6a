/**
 * Where model bytes come from. The engine core reads models only through this interface, so it has no
 * Node-only dependency: Node supplies a file source, browsers a fetch source.
 */
export interface ModelSource {
  /** For messages: a path or URL. */
  readonly name: string;
  size(): Promise<number>;
  /** Exactly `length` bytes at `offset`; throws if the source ends before that. */
  read(offset: number, length: number): Promise<Uint8Array>;
  close?(): Promise<void>;
}

/** A source over bytes already in memory (tests, small models fetched whole). */
export class BytesSource implements ModelSource {
  constructor(
    private readonly bytes: Uint8Array,
    readonly name = 'memory',
  ) {}
  async size(): Promise<number> {
    return this.bytes.byteLength;
  }
  async read(offset: number, length: number): Promise<Uint8Array> {
    if (offset + length > this.bytes.byteLength) {
      throw new Error(`${this.name}: read of ${length} bytes at ${offset} runs past the end (${this.bytes.byteLength} bytes)`);
    }
    return this.bytes.subarray(offset, offset + length);
  }
}
