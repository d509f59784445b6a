/**
 * Nesting depth of JSON text, found by one linear scan before anything parses it. JSON.parse, zod,
 * JSON.stringify and our own schema walkers all recurse per level, so a body of 100000 `[` would
 * overflow the stack somewhere downstream; refusing it here makes every later step safe. No transport
 * is assumed: any adapter that receives JSON text calls this first.
 */

/** Levels of `[`/`{` a request body may nest; JSON schemas inside requests need far fewer. */
export const MAX_JSON_DEPTH = 64;

export interface DepthExcess {
  /** The limit that was passed. */
  limit: number;
  /** Character offset of the bracket that went one level too deep. */
  offset: number;
}

/**
 * The first place `text` nests deeper than `limit`, or undefined. Brackets inside strings do not
 * count; malformed JSON is left for the parser to report, since the scan only has to bound depth.
 */
export function findDepthExcess(text: string, limit: number = MAX_JSON_DEPTH): DepthExcess | undefined {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++; // whatever is escaped cannot end the string
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > limit) return { limit, offset: i };
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      depth--;
    }
  }
  return undefined;
}
