/** HTTP Content-Range parsing for downloads and range reads (web APIs only). */

/** `bytes a-b/total`, `bytes a-b/*` or (on a 416) `bytes *\/total`; undefined when it is none of these. */
export function parseContentRange(h: string | null): { start?: number; end?: number; total?: number } | undefined {
  const text = h?.trim() ?? '';
  const range = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(text);
  if (range) return { start: Number(range[1]), end: Number(range[2]), total: range[3] === '*' ? undefined : Number(range[3]) };
  const unsatisfied = /^bytes \*\/(\d+)$/.exec(text);
  return unsatisfied ? { total: Number(unsatisfied[1]) } : undefined;
}
