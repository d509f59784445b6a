/** The prefix cache's bookkeeping over the page allocator, with no GPU: match, insert, refs, eviction. */
import { describe, expect, it } from 'vitest';
import { PageAllocator } from '../../engine/kv/page-allocator.ts';
import { PrefixCache } from '../../engine/kv/prefix-cache.ts';

const PS = 4;

function setup(numPages = 16, maxSeqs = 4, maxPagesPerSeq = 8) {
  const pages = new PageAllocator(numPages, PS, maxSeqs, maxPagesPerSeq);
  const cache = new PrefixCache(pages);
  pages.reclaimer = (n) => void cache.evict(n);
  return { pages, cache };
}

/** A sequence as the scheduler runs one: shared pages mapped first, the rest reserved, full pages listed. */
function admit(pages: PageAllocator, cache: PrefixCache, tokens: number[], length = tokens.length) {
  const slot = pages.acquireSlot()!;
  const shared = cache.match(tokens, tokens.length - 1);
  pages.share(slot, shared);
  if (!pages.reserve(slot, length)) {
    pages.release(slot);
    return undefined;
  }
  return { slot, shared };
}

function list(pages: PageAllocator, cache: PrefixCache, slot: number, tokens: number[]) {
  const full = Math.floor(tokens.length / PS);
  return cache.insert(tokens, pages.pagesOfSlot(slot).slice(0, full));
}

const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

describe('PrefixCache', () => {
  it('matches the longest run of full pages with the same whole prefix', () => {
    const { pages, cache } = setup();
    const a = range(100, 10); // two full pages and a partial one
    const s = admit(pages, cache, a)!;
    expect(s.shared).toEqual([]);
    expect(list(pages, cache, s.slot, a)).toBe(2);
    const [p0, p1] = pages.pagesOfSlot(s.slot);
    // Same first 8 tokens: both pages. Same first page only: one. A different first token: none.
    expect(cache.match([...range(100, 8), 1, 2, 3])).toEqual([p0, p1]);
    expect(cache.match([...range(100, 4), 9, 9, 9, 9, 9])).toEqual([p0]);
    expect(cache.match([7, ...range(101, 9)])).toEqual([]);
    // The second block matches only after the same first block: its key names its parent.
    expect(cache.match([...range(0, 4), ...range(104, 4), 0])).toEqual([]);
    // At most maxTokens: the last prompt token is left to compute.
    expect(cache.match(range(100, 8), 7)).toEqual([p0]);
    expect(cache.match(range(100, 9), 8)).toEqual([p0, p1]);
  });

  it('looks up the listed page whose start continues the match longest, within maxTokens and the key space', () => {
    const { pages, cache } = setup();
    const a = range(100, 8); // two full pages
    const s = admit(pages, cache, a)!;
    list(pages, cache, s.slot, a);
    const b = [...range(100, 4), 104, 105, 0, 0]; // first page, then a second page matching 2 of 4
    const t = admit(pages, cache, b)!;
    list(pages, cache, t.slot, b);
    const [p0, p1] = pages.pagesOfSlot(s.slot);
    const q1 = pages.pagesOfSlot(t.slot)[1];
    // Three of a's second page: longer than b's two.
    expect(cache.lookup([...range(100, 7), 1, 2])).toEqual({ pages: [p0], partial: { page: p1, tokens: 3 } });
    // Two only: both pages match that far; the more recently used wins (a's, just looked up; then b's).
    expect(cache.lookup([...range(100, 6), 9, 9])).toEqual({ pages: [p0], partial: { page: p1, tokens: 2 } });
    cache.match(b);
    expect(cache.lookup([...range(100, 6), 9, 9])).toEqual({ pages: [p0], partial: { page: q1, tokens: 2 } });
    // No full page: a first page's start (roots of the same key space only).
    expect(cache.lookup([100, 101, 7, 7, 7])).toEqual({ pages: [], partial: { page: p0, tokens: 2 } });
    expect(cache.lookup([100, 101, 7, 7, 7], 5, 'adapter-1')).toEqual({ pages: [] });
    // Within maxTokens in all (a whole page is never partial: it is shared), and none without a match.
    expect(cache.lookup(range(100, 8), 6)).toEqual({ pages: [p0], partial: { page: q1, tokens: 2 } }); // b's as far, and more recent
    expect(cache.lookup(range(100, 8), 7)).toEqual({ pages: [p0], partial: { page: p1, tokens: 3 } });
    expect(cache.lookup([...range(100, 4), 50, 51])).toEqual({ pages: [p0] });
    expect(cache.lookup(range(100, 8), 4)).toEqual({ pages: [p0] });
    // match() is the full pages alone.
    expect(cache.match([...range(100, 7), 1, 2])).toEqual([p0]);
    cache.recordLookup(7, 3);
    expect(cache.stats()).toMatchObject({ hitTokens: 7, copiedTokens: 3 });
  });

  it('never lists a partial page', () => {
    const { pages, cache } = setup();
    const a = range(1, 7);
    const s = admit(pages, cache, a)!;
    expect(list(pages, cache, s.slot, a)).toBe(1);
    expect(cache.stats().blocks).toBe(1);
    expect(() => cache.insert(a, pages.pagesOfSlot(s.slot))).toThrow(/need 8 tokens/);
    expect(cache.match([...a, 8, 9])).toHaveLength(1);
  });

  it('counts references: the cache holds one, each sharing sequence one', () => {
    const { pages, cache } = setup();
    const prompt = range(10, 9);
    const a = admit(pages, cache, prompt)!;
    const [p0, p1, p2] = pages.pagesOfSlot(a.slot);
    list(pages, cache, a.slot, prompt);
    expect([p0, p1, p2].map((p) => pages.refCount(p))).toEqual([2, 2, 1]);
    // Listing again adds nothing and takes no more references.
    expect(list(pages, cache, a.slot, prompt)).toBe(0);
    expect(pages.refCount(p0)).toBe(2);

    const b = admit(pages, cache, [...range(10, 8), 50, 51, 52], 12)!;
    expect(b.shared).toEqual([p0, p1]);
    expect(pages.pagesOfSlot(b.slot).slice(0, 2)).toEqual([p0, p1]);
    expect(pages.pagesOfSlot(b.slot)).toHaveLength(3);
    expect(pages.refCount(p0)).toBe(3);
    expect(pages.refCount(pages.pagesOfSlot(b.slot)[2])).toBe(1);

    pages.release(a.slot);
    expect([p0, p1].map((p) => pages.refCount(p))).toEqual([2, 2]);
    expect(pages.refCount(p2)).toBe(0);
    pages.release(b.slot);
    expect([p0, p1].map((p) => pages.refCount(p))).toEqual([1, 1]);
    expect(pages.freePages).toBe(16 - 2);
    cache.clear();
    expect(pages.freePages).toBe(16);
    expect(cache.stats().blocks).toBe(0);
  });

  it('evicts least recently used pages only the cache holds, and only when the allocator runs out', () => {
    const { pages, cache } = setup(8, 4, 8);
    // Three finished prompts of two full pages each: 6 pages held by the cache alone.
    const prompts = [range(100, 8), range(200, 8), range(300, 8)];
    for (const p of prompts) {
      const s = admit(pages, cache, p)!;
      list(pages, cache, s.slot, p);
      pages.release(s.slot);
    }
    expect(pages.freePages).toBe(2);
    // Touch the first prompt: now the second is the least recently used.
    expect(cache.match(prompts[0])).toHaveLength(2);
    // A sequence needing 4 pages: two are free, two come from evicting the second prompt's pages.
    const s = admit(pages, cache, range(900, 16))!;
    expect(s).toBeDefined();
    expect(pages.freePages).toBe(0);
    expect(cache.match(prompts[1])).toEqual([]);
    expect(cache.match(prompts[0])).toHaveLength(2);
    expect(cache.match(prompts[2])).toHaveLength(2);
    expect(cache.stats().evicted).toBe(2);
  });

  it('evicts the deeper page first within one prefix, and never a page a sequence uses', () => {
    const { pages, cache } = setup(6, 4, 6);
    const prompt = range(0, 12);
    const a = admit(pages, cache, prompt)!;
    list(pages, cache, a.slot, prompt);
    const [p0, p1, p2] = pages.pagesOfSlot(a.slot);
    // b shares the first two pages and is still running.
    const b = admit(pages, cache, [...range(0, 8), 77], 9)!;
    expect(b.shared).toEqual([p0, p1]);
    pages.release(a.slot);
    // Free: 6 - 3 (cache: p0, p1, p2) - 1 (b's own) = 2. A sequence of 3 pages needs one eviction: p2,
    // the only page the cache alone holds.
    expect(pages.freePages).toBe(2);
    const c = admit(pages, cache, range(500, 12))!;
    expect(c).toBeDefined();
    expect(pages.pagesOfSlot(c.slot)).toContain(p2);
    expect(cache.match(prompt)).toEqual([p0, p1]);
    // Nothing else can go: p0 and p1 are b's too. A sequence that needs a page fails and evicts nothing.
    expect(admit(pages, cache, range(600, 4))).toBeUndefined();
    expect(cache.match(prompt)).toEqual([p0, p1]);
    expect(cache.stats().evicted).toBe(1);
  });

  it('evicts nothing when even evicting everything would not be enough', () => {
    const { pages, cache } = setup(4, 4, 4);
    const p = range(0, 8);
    const a = admit(pages, cache, p)!;
    list(pages, cache, a.slot, p);
    pages.release(a.slot);
    const hold = pages.acquireSlot()!;
    expect(pages.reserve(hold, 4)).toBe(true); // one page left free, two in the cache
    const slot = pages.acquireSlot()!;
    expect(pages.reserve(slot, 16)).toBe(false); // needs 4: 1 free + 2 evictable is not enough
    expect(cache.stats().blocks).toBe(2);
    expect(pages.reserve(slot, 12)).toBe(true); // needs 3: evicts both
    expect(cache.stats().blocks).toBe(0);
  });

  it('dropping a block drops the blocks after it; their pages stay with the sequences using them', () => {
    const { pages, cache } = setup(8, 4, 8);
    const prompt = range(0, 8);
    // Two sequences computed the same prefix at once: the second listing keeps the first's blocks.
    const a = admit(pages, cache, prompt)!;
    const b = admit(pages, cache, [...prompt, 1, 2, 3, 4, 5])!;
    expect(b.shared).toEqual([]);
    list(pages, cache, a.slot, prompt);
    const bTokens = [...prompt, 1, 2, 3, 4, 5];
    expect(list(pages, cache, b.slot, bTokens)).toBe(1); // only b's third page is new, under a's second
    const aPages = pages.pagesOfSlot(a.slot);
    const bPages = pages.pagesOfSlot(b.slot);
    expect(cache.match(bTokens, 12)).toEqual([aPages[0], aPages[1], bPages[2]]);
    pages.release(a.slot); // a's pages: held by the cache alone now
    expect(pages.refCount(bPages[2])).toBe(2);
    // Evicting a's second page (the deeper of two equally recent) drops the block after it too; b's
    // third page stays b's.
    expect(cache.evict(1)).toBe(1);
    expect(pages.refCount(aPages[1])).toBe(0);
    expect(pages.refCount(bPages[2])).toBe(1);
    expect(cache.match(bTokens)).toEqual([aPages[0]]);
    pages.release(b.slot);
    cache.clear();
    expect(pages.freePages).toBe(8);
  });
});
