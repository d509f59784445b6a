/** The multipart/form-data parser of uploads: what the SDKs send parses, and every malformed or oversized body is a 400/413 naming why. */
import { describe, expect, it } from 'vitest';
import { multipartBoundary, parseMultipart, type MultipartLimits } from '../../adapters/http/multipart.ts';
import { ApiError } from '../../protocol/errors.ts';

const B = 'form-boundary-123';
const limits: MultipartLimits = { maxBytes: 4096, maxParts: 4, maxFieldBytes: 64 };

function body(...parts: string[]): Buffer {
  return Buffer.from(parts.map((p) => `--${B}\r\n${p}\r\n`).join('') + `--${B}--\r\n`);
}
const field = (name: string, value: string) => `Content-Disposition: form-data; name="${name}"\r\n\r\n${value}`;
const file = (name: string, filename: string, content: string) => `Content-Disposition: form-data; name="${name}"; filename="${filename}"\r\nContent-Type: application/jsonl\r\n\r\n${content}`;

function refused(f: () => unknown): ApiError {
  try {
    f();
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error('expected a refusal');
}

describe('multipart uploads', () => {
  it('parse fields and one file, bytes exact (CRLF inside the file kept)', () => {
    const u = parseMultipart(body(field('purpose', 'fine-tune'), file('file', 'train.jsonl', '{"a":1}\r\n{"b":2}\n')), B, limits);
    expect(u.fields).toEqual({ purpose: 'fine-tune' });
    expect(u.file).toMatchObject({ field: 'file', filename: 'train.jsonl', contentType: 'application/jsonl' });
    expect(Buffer.from(u.file!.bytes).toString()).toBe('{"a":1}\r\n{"b":2}\n');
  });

  it('read the boundary from the content type, quoted or not', () => {
    expect(multipartBoundary(`multipart/form-data; boundary=${B}`)).toBe(B);
    expect(multipartBoundary(`multipart/form-data; boundary="${B}"`)).toBe(B);
    expect(refused(() => multipartBoundary('application/json')).code).toBe('unsupported_content_type');
    expect(refused(() => multipartBoundary('multipart/form-data')).message).toMatch(/no boundary/);
  });

  it('decode quoted and RFC 5987 file names', () => {
    expect(parseMultipart(body(file('file', 'my %22data%22.jsonl', 'x')), B, limits).file!.filename).toBe('my "data".jsonl');
    const ext = `Content-Disposition: form-data; name="file"; filename*=utf-8''donn%C3%A9es.jsonl\r\n\r\nx`;
    expect(parseMultipart(body(ext), B, limits).file!.filename).toBe('données.jsonl');
  });

  it('refuse malformed and unbounded bodies, naming why', () => {
    const cases: Array<[Buffer, RegExp | number]> = [
      [Buffer.from('no boundary here'), /never occurs/],
      [Buffer.from(`--${B}\r\n${field('purpose', 'x')}`), /not followed by a boundary/],
      [body('Content-Type: text/plain\r\n\r\nx'), /no 'Content-Disposition: form-data'/],
      [body('Content-Disposition: form-data\r\n\r\nx'), /has no name/],
      [body(field('a', '1'), field('b', '2'), field('c', '3'), field('d', '4'), field('e', '5')), /more than 4 parts/],
      [body(field('purpose', 'x'.repeat(65))), /longer than 64 bytes/],
      [body(file('file', 'a', '1'), file('file', 'b', '2')), /more than one file/],
      [Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="a"` + 'x'.repeat(9000)), /no end of headers/],
    ];
    for (const [b, why] of cases) {
      const e = refused(() => parseMultipart(b, B, { ...limits, maxBytes: 1e6 }));
      expect(e.status).toBe(400);
      expect(e.message).toMatch(why as RegExp);
    }
    expect(refused(() => parseMultipart(Buffer.alloc(5000), B, limits)).status).toBe(413);
    const wrong = refused(() => parseMultipart(body(file('upload', 'a', '1')), B, limits));
    expect([wrong.status, wrong.param]).toEqual([400, 'upload']);
  });
});
