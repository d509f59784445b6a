/**
 * Bookkeeping of the paged KV cache, with no GPU in it: a pool of fixed-size pages, a page table per
 * sequence slot, and reference counts so that a later prefix cache can share pages between sequences.
 */
export class PageAllocator {
  private readonly free: number[] = [];
  private readonly refs: Uint16Array;
  /** Page table: slot s owns entries [s * maxPagesPerSeq, (s + 1) * maxPagesPerSeq). */
  readonly table: Uint32Array;
  private readonly pagesOf: number[];
  private readonly freeSlots: number[] = [];
  /** Slots whose table rows changed since the last `takeDirty()`. */
  private readonly dirty = new Set<number>();
  /**
   * Asked by reserve() to free at least `n` more pages when too few are free (the prefix cache evicts
   * pages only it holds); it frees nothing when it cannot free `n`.
   */
  reclaimer: ((n: number) => void) | undefined;

  constructor(
    readonly numPages: number,
    readonly pageSize: number,
    readonly maxSeqs: number,
    readonly maxPagesPerSeq: number,
  ) {
    for (let p = numPages - 1; p >= 0; p--) this.free.push(p);
    for (let s = maxSeqs - 1; s >= 0; s--) this.freeSlots.push(s);
    this.refs = new Uint16Array(numPages);
    this.table = new Uint32Array(maxSeqs * maxPagesPerSeq);
    this.pagesOf = new Array(maxSeqs).fill(0);
  }

  get freePages(): number {
    return this.free.length;
  }

  get freeSequenceSlots(): number {
    return this.freeSlots.length;
  }

  /** Positions a slot can hold with the pages it has now. */
  capacity(slot: number): number {
    return this.pagesOf[slot] * this.pageSize;
  }

  /** A sequence slot with no pages, or undefined when every slot is taken. */
  acquireSlot(): number | undefined {
    return this.freeSlots.pop();
  }

  /** Pages needed for `slot` to hold `length` positions beyond what it has. */
  pagesNeeded(slot: number, length: number): number {
    return Math.max(0, Math.ceil(length / this.pageSize) - this.pagesOf[slot]);
  }

  /**
   * Grow `slot` to hold `length` positions, asking the reclaimer for pages first when too few are free.
   * Returns false (and changes nothing) when pages run out.
   */
  reserve(slot: number, length: number): boolean {
    const want = Math.ceil(length / this.pageSize);
    if (want > this.maxPagesPerSeq) throw new Error(`sequence of ${length} positions exceeds the page table (${this.maxPagesPerSeq * this.pageSize})`);
    const need = want - this.pagesOf[slot];
    if (need <= 0) return true;
    if (need > this.free.length) this.reclaimer?.(need - this.free.length);
    if (need > this.free.length) return false;
    for (let i = 0; i < need; i++) {
      const page = this.free.pop()!;
      this.refs[page] = 1;
      this.table[slot * this.maxPagesPerSeq + this.pagesOf[slot]++] = page;
    }
    this.dirty.add(slot);
    return true;
  }

  /** Map pages another holder already has (a cached prefix) after the slot's last page, one reference each. */
  share(slot: number, pages: readonly number[]): void {
    if (this.pagesOf[slot] + pages.length > this.maxPagesPerSeq) throw new Error(`${this.pagesOf[slot] + pages.length} pages exceed the page table (${this.maxPagesPerSeq})`);
    for (const page of pages) {
      if (this.refs[page] === 0) throw new Error(`page ${page} is free and cannot be shared`);
      this.refs[page]++;
      this.table[slot * this.maxPagesPerSeq + this.pagesOf[slot]++] = page;
    }
    if (pages.length > 0) this.dirty.add(slot);
  }

  /** Pages the slot holds now, in position order. */
  pagesOfSlot(slot: number): number[] {
    const base = slot * this.maxPagesPerSeq;
    return Array.from(this.table.subarray(base, base + this.pagesOf[slot]));
  }

  /** The page holding position `position` of `slot`. */
  pageAt(slot: number, position: number): number {
    const i = Math.floor(position / this.pageSize);
    if (i >= this.pagesOf[slot]) throw new Error(`position ${position} is beyond slot ${slot}'s ${this.pagesOf[slot]} pages`);
    return this.table[slot * this.maxPagesPerSeq + i];
  }

  refCount(page: number): number {
    return this.refs[page];
  }

  /** Take one more reference on a page in use (the prefix cache keeping it). */
  retain(page: number): void {
    if (this.refs[page] === 0) throw new Error(`page ${page} is free and cannot be retained`);
    this.refs[page]++;
  }

  /** Drop one reference taken with retain(); the page is free again when it was the last. */
  unref(page: number): void {
    if (this.refs[page] === 0) throw new Error(`page ${page} is already free`);
    if (--this.refs[page] === 0) this.free.push(page);
  }

  /** Return a slot and its pages (pages shared with another sequence stay until their last user frees them). */
  release(slot: number): void {
    const base = slot * this.maxPagesPerSeq;
    for (let i = 0; i < this.pagesOf[slot]; i++) {
      const page = this.table[base + i];
      if (--this.refs[page] === 0) this.free.push(page);
      this.table[base + i] = 0;
    }
    this.pagesOf[slot] = 0;
    this.dirty.add(slot);
    this.freeSlots.push(slot);
  }

  takeDirty(): number[] {
    const out = [...this.dirty];
    this.dirty.clear();
    return out;
  }
}
