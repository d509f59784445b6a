/**
 * The merge loop SentencePiece and byte-level BPE share (llama.cpp's spm and bpe sessions). Symbols are
 * ranges of one string, in a doubly linked list; the cheapest adjacent pair (leftmost on ties) merges
 * into its left symbol, whose new neighbour pairs are queued in turn.
 */
import { Heap } from './heap.ts';

interface Pair {
  left: number;
  right: number;
  cost: number;
  /** Combined length when queued; a different length at pop time means a side has changed since. */
  size: number;
}

const cheaper = (a: Pair, b: Pair) => a.cost < b.cost || (a.cost === b.cost && a.left < b.left);

/**
 * Merges symbols in place: `len[i]` is symbol i's length, set to 0 for symbols merged into their left
 * neighbour. `cost(left, right)` is the cost of merging two adjacent symbols as they are now (lower
 * merges first), or undefined when they cannot merge. Returns `next`: each symbol's right neighbour in
 * the final list (-1 at the end).
 */
export function mergeSymbols(len: number[], cost: (left: number, right: number) => number | undefined): number[] {
  const count = len.length;
  const prev = Array.from({ length: count }, (_, i) => i - 1);
  const next = Array.from({ length: count }, (_, i) => (i + 1 < count ? i + 1 : -1));
  const queue = new Heap<Pair>(cheaper);
  const tryPair = (left: number, right: number) => {
    if (left === -1 || right === -1) return;
    const c = cost(left, right);
    if (c !== undefined) queue.push({ left, right, cost: c, size: len[left] + len[right] });
  };
  for (let i = 1; i < count; i++) tryPair(i - 1, i);

  for (let b = queue.pop(); b !== undefined; b = queue.pop()) {
    // Symbols only grow, so an unchanged total length means the queued pair is still current.
    if (len[b.left] === 0 || len[b.right] === 0 || len[b.left] + len[b.right] !== b.size) continue;
    len[b.left] += len[b.right];
    len[b.right] = 0;
    next[b.left] = next[b.right];
    if (next[b.right] >= 0) prev[next[b.right]] = b.left;
    tryPair(prev[b.left], b.left);
    tryPair(b.left, next[b.left]);
  }
  return next;
}
