/** Message content as plain text. */
import { EngineInputError } from '../types.ts';
import type { ChatContent } from './types.ts';

export function contentText(content: ChatContent | null | undefined, where: string): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new EngineInputError(`${where}.content must be a string or an array of text parts`, `${where}.content`);
  return content
    .map((part, i) => {
      if (part?.type !== 'text' || typeof part.text !== 'string') {
        throw new EngineInputError(`${where}.content[${i}] is a ${JSON.stringify(part?.type)} part; only text parts are supported`, `${where}.content`);
      }
      return part.text;
    })
    .join('');
}
