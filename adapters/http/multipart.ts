/**
 * multipart/form-data (RFC 7578) as the provider's SDKs send file uploads: text fields and one file.
 * Bounded before any work: the body's size is checked while it is read, and parsing stops at the first
 * part beyond `maxParts`, a header block beyond 8 KiB, or a text field beyond `maxFieldBytes`. Every
 * failure is a 400 (or 413) naming what was wrong.
 */
import type { IncomingMessage } from 'node:http';
import type { Upload } from '../../protocol/context.ts';
import { ApiError, invalidRequest } from '../../protocol/errors.ts';

export interface MultipartLimits {
  /** The whole body, in bytes (413 above). */
  maxBytes: number;
  maxParts: number;
  maxFieldBytes: number;
}

export const DEFAULT_MAX_UPLOAD_BYTES = 16 * 1024 * 1024;
export const DEFAULT_MULTIPART_LIMITS: MultipartLimits = { maxBytes: DEFAULT_MAX_UPLOAD_BYTES, maxParts: 16, maxFieldBytes: 64 * 1024 };
const MAX_HEADER_BYTES = 8 * 1024;

function uploadTooLarge(limit: number): ApiError {
  return new ApiError(413, 'invalid_request_error', `The upload is larger than the ${limit} bytes this server accepts for a file.`, { code: 'request_too_large' });
}

function bad(why: string): ApiError {
  return invalidRequest(`Invalid multipart/form-data body: ${why}.`, null, 'invalid_multipart');
}

/** The boundary of a multipart/form-data content type; 400 for any other type. */
export function multipartBoundary(contentType: string | undefined): string {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'multipart/form-data') {
    throw invalidRequest(`File uploads must be sent as 'Content-Type: multipart/form-data'${type ? `, got '${type.slice(0, 60)}'` : ', and the header is missing'}.`, null, 'unsupported_content_type');
  }
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;"]{1,70}))/i.exec(contentType ?? '');
  if (!m) throw bad('the Content-Type has no boundary (1-70 characters)');
  return m[1] ?? m[2];
}

/** Reads and parses an upload from an HTTP request. */
export async function readUpload(req: IncomingMessage, limits: MultipartLimits = DEFAULT_MULTIPART_LIMITS): Promise<Upload> {
  const boundary = multipartBoundary(req.headers['content-type']);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limits.maxBytes) throw uploadTooLarge(limits.maxBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limits.maxBytes) throw uploadTooLarge(limits.maxBytes);
    chunks.push(chunk);
  }
  return parseMultipart(Buffer.concat(chunks), boundary, limits);
}

export function parseMultipart(body: Buffer, boundary: string, limits: MultipartLimits = DEFAULT_MULTIPART_LIMITS): Upload {
  if (body.length > limits.maxBytes) throw uploadTooLarge(limits.maxBytes);
  const dash = Buffer.from(`--${boundary}`);
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  // The first delimiter may follow a preamble (without the leading CRLF when it opens the body).
  let pos: number;
  if (body.subarray(0, dash.length).equals(dash)) pos = dash.length;
  else {
    const first = body.indexOf(delimiter);
    if (first < 0) throw bad('the boundary from the Content-Type never occurs in the body');
    pos = first + delimiter.length;
  }
  const fields: Record<string, string> = {};
  let file: Upload['file'];
  let parts = 0;
  for (;;) {
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) break; // "--": the closing delimiter
    // Transport padding (spaces, tabs) may follow a delimiter before its CRLF.
    while (body[pos] === 0x20 || body[pos] === 0x09) pos++;
    if (body[pos] !== 0x0d || body[pos + 1] !== 0x0a) throw bad('a boundary line does not end with CRLF (or the body ends without the closing boundary)');
    pos += 2;
    if (++parts > limits.maxParts) throw bad(`more than ${limits.maxParts} parts`);
    const headerEnd = body.indexOf('\r\n\r\n', pos);
    if (headerEnd < 0 || headerEnd - pos > MAX_HEADER_BYTES) throw bad(`part ${parts} has no end of headers within ${MAX_HEADER_BYTES} bytes`);
    const headers = parseHeaders(body.subarray(pos, headerEnd).toString('utf8'), parts);
    const start = headerEnd + 4;
    const end = body.indexOf(delimiter, start);
    if (end < 0) throw bad(`part ${parts} ("${headers.name}") is not followed by a boundary; the body may be cut short`);
    const content = body.subarray(start, end);
    if (headers.filename !== undefined) {
      if (file) throw bad(`more than one file (parts "${file.field}" and "${headers.name}"); send one file per upload`);
      // A copy: the part must not keep the whole body alive.
      file = { field: headers.name, filename: headers.filename, contentType: headers.contentType, bytes: new Uint8Array(content) };
    } else {
      if (content.length > limits.maxFieldBytes) throw bad(`field "${headers.name}" is longer than ${limits.maxFieldBytes} bytes`);
      if (!Object.hasOwn(fields, headers.name)) fields[headers.name] = content.toString('utf8');
    }
    pos = end + delimiter.length;
  }
  // Only the file field the provider's API names counts as the upload.
  if (file && file.field !== 'file') throw invalidRequest(`Unknown file field '${file.field.slice(0, 64)}': send the training file in the field 'file'.`, file.field.slice(0, 64));
  return { fields, ...(file ? { file } : {}) };
}

function parseHeaders(text: string, part: number): { name: string; filename?: string; contentType: string } {
  let disposition: string | undefined;
  let contentType = 'application/octet-stream';
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon < 0) throw bad(`part ${part} has a header line without ':'`);
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (key === 'content-disposition') disposition = value;
    else if (key === 'content-type') contentType = value.slice(0, 200);
  }
  if (!disposition || !/^form-data\s*(;|$)/i.test(disposition)) throw bad(`part ${part} has no 'Content-Disposition: form-data' header`);
  const name = param(disposition, 'name');
  if (!name) throw bad(`part ${part} has no name`);
  const filename = param(disposition, 'filename*') ?? param(disposition, 'filename');
  return { name: name.slice(0, 128), ...(filename !== undefined ? { filename } : {}), contentType };
}

/** A Content-Disposition parameter: quoted (browsers and undici percent-encode '"' as %22), bare, or RFC 5987 `utf-8''…`. */
function param(header: string, key: string): string | undefined {
  const escaped = key.replace('*', '\\*');
  const m = new RegExp(`;\\s*${escaped}=(?:"((?:[^"\\\\]|\\\\.)*)"|([^;\\s]*))`, 'i').exec(header);
  if (!m) return undefined;
  const raw = m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2];
  if (key.endsWith('*')) {
    const ext = /^utf-8''(.*)$/i.exec(raw);
    try {
      return ext ? decodeURIComponent(ext[1]) : raw;
    } catch {
      return raw;
    }
  }
  return raw.replace(/%22/g, '"');
}
