/**
 * The prefix cache: full KV pages shared between sequences by token prefix (a specialist's system
 * prompt, a conversation's history). A hash chain over page-sized token blocks: a block's key is its
 * parent block's identity plus its own tokens, so a block matches only after the same whole prefix.
 * Only full pages are listed, and a sequence only appends after its full pages, so no sequence ever
 * writes into a page it shares. Where a prompt goes on to match only the start of a listed page (a
 * specialist's system prompt ends mid-page, and each user's text follows it), lookup() names that page
 * and how many of its positions match: the caller copies those rows into a page of its own (as
 * SGLang's token-granular radix tree serves them, where vLLM's page-granular blocks recompute them).
 * KV computed under a LoRA adapter differs from the base model's: each adapter has its own key space
 * (`space`, the adapter id; '' for the base model), so a chain matches only pages computed under the
 * same adapter.
 *
 * The cache holds one reference (PageAllocator refs) on each page it lists. When the allocator runs out
 * of free pages it asks the cache to evict: pages only the cache holds go, least recently used first,
 * so the cache never takes capacity from the sequences.
 */
import type { PageAllocator } from './page-allocator.ts';

interface Block {
  /** Identity for the children's keys; never reused. */
  readonly id: number;
  readonly key: string;
  /** Its page's tokens, to measure a partial match against (lookup). */
  readonly tokens: readonly number[];
  readonly page: number;
  readonly parent: Block | undefined;
  readonly children: Set<Block>;
  /** Blocks before this one (0 for the first page of a prompt). */
  readonly depth: number;
  /** Tick of the last match or insert through this block (a path's blocks share one tick). */
  lastUse: number;
}

export interface PrefixCacheStats {
  /** Pages the cache lists now. */
  blocks: number;
  lookups: number;
  /** Lookups that found at least one page. */
  hits: number;
  /** Prompt tokens found in the cache, over all lookups. */
  hitTokens: number;
  /** Of hitTokens, those served by copying the matching start of a listed page (lookup's `partial`). */
  copiedTokens: number;
  /** Blocks listed, and blocks dropped (evicted, or cleared when the cache is turned off). */
  inserted: number;
  evicted: number;
}

/** What lookup() found for a prompt. */
export interface PrefixMatch {
  /** The listed pages of its longest run of whole matching blocks, in position order: shared. */
  pages: number[];
  /**
   * The listed page after them whose first `tokens` positions (1 .. pageSize - 1) continue the match:
   * copied, since the prompt goes on differently within that page.
   */
  partial?: { page: number; tokens: number };
}

export class PrefixCache {
  private readonly blocks = new Map<string, Block>();
  private readonly roots = new Set<Block>();
  private nextId = 1;
  private clock = 0;
  private readonly counts = { lookups: 0, hits: 0, hitTokens: 0, copiedTokens: 0, inserted: 0, evicted: 0 };

  constructor(private readonly pages: PageAllocator) {}

  get pageSize(): number {
    return this.pages.pageSize;
  }

  stats(): PrefixCacheStats {
    return { blocks: this.blocks.size, ...this.counts };
  }

  /**
   * The pages of the longest cached run of full blocks that begins `tokens`, covering at most
   * `maxTokens` tokens (a prompt leaves its last token to compute, so the sampler has logits).
   */
  match(tokens: readonly number[], maxTokens = tokens.length, space = ''): number[] {
    return this.lookup(tokens, maxTokens, space, false).pages;
  }

  /**
   * match(), and with `partial` the listed page after the run whose start matches the next tokens
   * longest (most recently used among equals), within `maxTokens` in all. The caller copies its rows
   * before the page can be evicted (take a reference first).
   */
  lookup(tokens: readonly number[], maxTokens = tokens.length, space = '', partial = true): PrefixMatch {
    const ps = this.pageSize;
    const limit = Math.min(maxTokens, tokens.length);
    const n = Math.floor(limit / ps);
    const pages: number[] = [];
    const tick = ++this.clock;
    let parent: Block | undefined;
    for (let i = 0; i < n; i++) {
      const b = this.blocks.get(keyOf(parent, tokens, i, ps, space));
      if (!b) break;
      b.lastUse = tick;
      pages.push(b.page);
      parent = b;
    }
    if (!partial) return { pages };
    const start = pages.length * ps;
    const room = Math.min(ps - 1, limit - start);
    let best: Block | undefined;
    let bestLength = 0;
    const root = rootPrefix(space);
    for (const b of parent?.children ?? this.roots) {
      if (!parent && !b.key.startsWith(root)) continue;
      let m = 0;
      while (m < room && b.tokens[m] === tokens[start + m]) m++;
      if (m > bestLength || (m === bestLength && m > 0 && b.lastUse > best!.lastUse)) {
        best = b;
        bestLength = m;
      }
    }
    if (!best) return { pages };
    best.lastUse = tick;
    return { pages, partial: { page: best.page, tokens: bestLength } };
  }

  /** Count one admitted lookup that found `tokens` cached tokens, `copied` of them from a partial page (lookup may run again for a waiting one). */
  recordLookup(tokens: number, copied = 0): void {
    this.counts.lookups++;
    if (tokens > 0) this.counts.hits++;
    this.counts.hitTokens += tokens;
    this.counts.copiedTokens += copied;
  }

  /**
   * List the full pages `pages` holding `tokens` from position 0 (pages[i] holds tokens
   * [i * pageSize, (i + 1) * pageSize)). Blocks already listed are kept (and touched); each new block takes
   * a reference on its page. Returns how many blocks were new.
   */
  insert(tokens: readonly number[], pages: readonly number[], space = ''): number {
    const ps = this.pageSize;
    if (pages.length * ps > tokens.length) throw new Error(`${pages.length} pages of ${ps} need ${pages.length * ps} tokens; got ${tokens.length}`);
    const tick = ++this.clock;
    let added = 0;
    let parent: Block | undefined;
    for (let i = 0; i < pages.length; i++) {
      const key = keyOf(parent, tokens, i, ps, space);
      let b = this.blocks.get(key);
      if (!b) {
        this.pages.retain(pages[i]);
        b = { id: this.nextId++, key, tokens: tokens.slice(i * ps, (i + 1) * ps), page: pages[i], parent, children: new Set(), depth: i, lastUse: tick };
        this.blocks.set(key, b);
        (parent?.children ?? this.roots).add(b);
        added++;
      }
      b.lastUse = tick;
      parent = b;
    }
    this.counts.inserted += added;
    return added;
  }

  /**
   * Free at least `n` pages by evicting blocks whose page only the cache holds, least recently used
   * first (deeper first among equals, so a prefix outlives its extensions). Evicting a block drops its
   * descendants too (their keys name it). Evicts nothing when fewer than `n` pages can be freed.
   */
  evict(n: number): number {
    const candidates = [...this.blocks.values()].filter((b) => this.pages.refCount(b.page) === 1);
    if (candidates.length < n) return 0;
    candidates.sort((a, b) => a.lastUse - b.lastUse || b.depth - a.depth);
    const before = this.pages.freePages;
    for (const b of candidates) {
      if (this.pages.freePages - before >= n) break;
      if (this.blocks.get(b.key) === b) this.remove(b);
    }
    return this.pages.freePages - before;
  }

  /** Drop every block of key space `space` (an unloaded adapter's pages, which nothing can match again). */
  dropSpace(space: string): void {
    const prefix = rootPrefix(space);
    for (const b of [...this.roots]) if (b.key.startsWith(prefix)) this.remove(b);
  }

  /** Drop every block (pages still used by sequences stay theirs). */
  clear(): void {
    for (const b of [...this.roots]) this.remove(b);
  }

  private remove(b: Block): void {
    for (const c of [...b.children]) this.remove(c);
    this.blocks.delete(b.key);
    (b.parent?.children ?? this.roots).delete(b);
    this.pages.unref(b.page);
    this.counts.evicted++;
  }
}

/** A first block's key starts with its space; later blocks are tied to it through their parent's id. */
function keyOf(parent: Block | undefined, tokens: readonly number[], block: number, pageSize: number, space: string): string {
  return `${parent ? parent.id : rootPrefix(space)}:${tokens.slice(block * pageSize, (block + 1) * pageSize).join(',')}`;
}

function rootPrefix(space: string): string {
  return `root/${space}/`;
}
