/** Reads a JSON request body with a size limit; every failure is an ApiError in the provider's shape. */
import type { IncomingMessage } from 'node:http';
import { ApiError, invalidRequest } from '../../protocol/errors.ts';
import { findDepthExcess } from '../../protocol/json-depth.ts';

export function tooLarge(limit: number): ApiError {
  return new ApiError(413, 'invalid_request_error', `The request body is larger than the ${limit} bytes this server accepts.`, { code: 'request_too_large' });
}

export async function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json') {
    throw invalidRequest(`Request bodies must be JSON with 'Content-Type: application/json'${type ? `, got '${type.slice(0, 60)}'` : ', and the header is missing'}.`, null, 'unsupported_content_type');
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);

  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw tooLarge(limit);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text.trim()) throw invalidRequest('We could not parse the JSON body of your request: the body is empty. The API expects a JSON object.', null, 'invalid_json');
  // Before JSON.parse: it, and every walker after it, recurses per level.
  const deep = findDepthExcess(text);
  if (deep) {
    throw invalidRequest(
      `The JSON body nests deeper than the ${deep.limit} levels of arrays and objects this API accepts (the ${deep.limit + 1}th level opens at character ${deep.offset}).`,
      null,
      'json_too_deep',
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // The parser's message quotes the body; the caller has it already and logs must not get it.
    throw invalidRequest('We could not parse the JSON body of your request: it is not valid JSON. The API expects a JSON object.', null, 'invalid_json');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalidRequest('The request body must be a JSON object.', null, 'invalid_json');
  return value;
}
