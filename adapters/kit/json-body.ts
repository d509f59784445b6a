/**
 * A request body's text to the JSON object a handler gets, the same for every transport (HTTP, the
 * in-process client, later WebSocket): size first, nesting depth before parsing (JSON.parse and every
 * walker after it recurse per level), then an object. Every failure is an ApiError in the provider's shape.
 */
import { ApiError, invalidRequest } from '../../protocol/errors.ts';
import { findDepthExcess } from '../../protocol/json-depth.ts';

export function tooLarge(limit: number): ApiError {
  return new ApiError(413, 'invalid_request_error', `The request body is larger than the ${limit} bytes this server accepts.`, { code: 'request_too_large' });
}

/** `bytes`: the body's size in bytes (UTF-8), checked against `limit` before anything else. */
export function parseJsonBody(text: string, bytes: number, limit: number): unknown {
  if (bytes > limit) throw tooLarge(limit);
  if (!text.trim()) throw invalidRequest('We could not parse the JSON body of your request: the body is empty. The API expects a JSON object.', null, 'invalid_json');
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

/** Bodies must be declared JSON (as the provider's API requires); the refusal names what was sent instead. */
export function requireJsonContentType(header: string | null | undefined): void {
  const type = (header ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json') {
    throw invalidRequest(`Request bodies must be JSON with 'Content-Type: application/json'${type ? `, got '${type.slice(0, 60)}'` : ', and the header is missing'}.`, null, 'unsupported_content_type');
  }
}
