/**
 * Split a weight matrix into runs of whole rows that each fit one storage binding. Compatibility mode
 * allows 128 MiB per binding; a 128256 x 2048 Q8_0 embedding is ~295 MB, so kernels run one dispatch
 * per shard, each with its shard's first row as the row offset.
 */
import { GgmlType, typeName } from '../../ggml/types.ts';
import { gpuLayout } from './layouts.ts';

export interface RowShard {
  /** First row of the matrix in this shard. */
  rowBegin: number;
  rows: number;
  /** Offset of the shard in the whole matrix's GPU layout (rowBegin * rowBytes). */
  byteOffset: number;
  /** GPU bytes of the shard (rows * rowBytes, in whole groups of rows where the layout groups them). */
  byteSize: number;
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/**
 * Shards of at most `maxBindingBytes` (pass `ctx.caps.maxStorageBinding`). Where shards can be, their
 * byte offsets are multiples of `offsetAlignment` (the device's minStorageBufferOffsetAlignment), so
 * they may be bound as ranges of one buffer as well as uploaded into buffers of their own. With rows in
 * groups (`rowGroup`, the layout's), every shard but the last holds whole groups.
 */
export function planRowShards(type: GgmlType, rows: number, cols: number, maxBindingBytes: number, offsetAlignment = 256, rowGroup = 1): RowShard[] {
  const layout = gpuLayout(type, rowGroup);
  const rowBytes = layout.rowBytes(cols);
  if (rowBytes * rowGroup > maxBindingBytes) {
    throw new Error(`${rowGroup > 1 ? `a group of ${rowGroup} rows` : 'one row'} of ${cols} elements of ${typeName(type)} takes ${rowBytes * rowGroup} bytes, more than a storage binding allows (${maxBindingBytes})`);
  }
  let perShard = Math.floor(maxBindingBytes / rowBytes);
  const step = offsetAlignment / gcd(rowBytes, offsetAlignment);
  if (perShard < rows && perShard >= step) perShard -= perShard % step;
  if (perShard < rows) perShard -= perShard % rowGroup;
  const shards: RowShard[] = [];
  for (let rowBegin = 0; rowBegin < rows; rowBegin += perShard) {
    const n = Math.min(perShard, rows - rowBegin);
    shards.push({ rowBegin, rows: n, byteOffset: rowBegin * rowBytes, byteSize: layout.bufferBytes(n, cols) });
  }
  return shards;
}
