/** Reads a JSON request body with a size limit; every failure is an ApiError in the provider's shape. */
import type { IncomingMessage } from 'node:http';
import { parseJsonBody, requireJsonContentType, tooLarge } from '../kit/json-body.ts';

export { tooLarge };

export async function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  requireJsonContentType(req.headers['content-type']);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);

  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw tooLarge(limit);
    chunks.push(chunk);
  }
  return parseJsonBody(Buffer.concat(chunks).toString('utf8'), size, limit);
}
