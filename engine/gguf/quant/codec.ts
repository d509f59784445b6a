import type { GgmlType } from '../../../ggml/types.ts';

/** CPU reference of one GGML tensor type: the layout exactly as llama.cpp writes it in GGUF files. */
export interface QuantCodec {
  readonly type: GgmlType;
  /** Elements per block (1 for the float types). */
  readonly blockElements: number;
  /** Bytes per block in the file. */
  readonly blockBytes: number;
  /** Decode `elements` values (a whole number of blocks) from the start of `raw`. */
  dequantize(raw: Uint8Array, elements: number): Float32Array;
  /** Encode `src` (a whole number of blocks) as valid GGML blocks. */
  quantize(src: Float32Array): Uint8Array;
}

export function checkBlocks(name: string, elements: number, blockElements: number): number {
  if (!Number.isInteger(elements) || elements < 0 || elements % blockElements !== 0) {
    throw new Error(`${name}: ${elements} elements is not a whole number of ${blockElements}-element blocks`);
  }
  return elements / blockElements;
}

export function checkRaw(name: string, raw: Uint8Array, bytes: number): DataView {
  if (raw.byteLength < bytes) throw new Error(`${name}: need ${bytes} bytes, got ${raw.byteLength}`);
  return new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
}

/** C's roundf: halves round away from zero (Math.round rounds them up). */
export function roundAway(v: number): number {
  return v < 0 ? -Math.round(-v) : Math.round(v);
}

/**
 * The float types, one element per "block": `read` and `write` move one value at a byte offset of a
 * little-endian view (the file's byte order).
 */
export function scalarCodec(
  name: string,
  type: GgmlType,
  bytes: number,
  read: (view: DataView, offset: number) => number,
  write: (view: DataView, offset: number, value: number) => void,
): QuantCodec {
  return {
    type,
    blockElements: 1,
    blockBytes: bytes,
    dequantize(raw, elements) {
      checkBlocks(name, elements, 1);
      const view = checkRaw(name, raw, elements * bytes);
      const out = new Float32Array(elements);
      for (let i = 0; i < elements; i++) out[i] = read(view, i * bytes);
      return out;
    },
    quantize(src) {
      const out = new Uint8Array(src.length * bytes);
      const view = new DataView(out.buffer);
      for (let i = 0; i < src.length; i++) write(view, i * bytes, src[i]);
      return out;
    },
  };
}
