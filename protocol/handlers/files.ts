/**
 * `/v1/files`: training files for fine-tuning, in the provider's shapes. An upload is checked whole on
 * arrival (every bad line named by its number), so a job never starts on a file it cannot use. Files
 * belong to the account: another account's id is a 404 as for one that never existed.
 */
import { describeProblems, validateTrainingJsonlAsync } from '../../engine/train/data.ts';
import type { Caller } from '../access.ts';
import { json, type Outcome, type RequestContext, type ServiceParts } from '../context.ts';
import { ApiError, invalidRequest } from '../errors.ts';
import { fineTuningFor } from '../fine-tuning/access.ts';
import { parsePage } from '../fine-tuning/requests.ts';
import { fileObject, listObject } from '../fine-tuning/shapes.ts';
import { randomBase62 } from '../ids.ts';

export const FINE_TUNE_PURPOSE = 'fine-tune';
/** What one account may keep in files: uploads beyond are refused until it deletes some. */
export const MAX_FILES_PER_ACCOUNT = 500;
export const MAX_FILE_BYTES_PER_ACCOUNT = 1024 * 1024 * 1024;
const MAX_FILENAME_CHARS = 255;

export function fileNotFound(id: string, param: string | null = null): ApiError {
  return new ApiError(404, 'invalid_request_error', `No such File object: ${id.slice(0, 128)}`, { code: 'file_not_found', param });
}

export async function createFile(svc: ServiceParts, caller: Caller, ctx: RequestContext): Promise<Outcome> {
  const ft = fineTuningFor(svc, caller);
  await svc.access.takeRequest(caller);
  if (!ctx.readUpload) throw invalidRequest('File uploads need a multipart/form-data request (fields `file` and `purpose`) over HTTP; this transport cannot carry one.', 'file', 'unsupported_transport');
  const upload = await ctx.readUpload();
  const purpose = upload.fields.purpose;
  if (purpose === undefined) throw invalidRequest("Missing required parameter: 'purpose'.", 'purpose');
  if (purpose !== FINE_TUNE_PURPOSE) throw invalidRequest(`Invalid 'purpose': this service keeps files for fine-tuning only, so it must be "${FINE_TUNE_PURPOSE}", got ${JSON.stringify(purpose.slice(0, 64))}.`, 'purpose');
  const file = upload.file;
  if (!file) throw invalidRequest("Missing required parameter: 'file' (a multipart part with a filename).", 'file');

  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(file.bytes);
  } catch {
    throw invalidRequest('Invalid file: the training file must be UTF-8 text (JSONL, one {"messages": [...]} object per line).', 'file', 'invalid_training_file');
  }
  const check = await validateTrainingJsonlAsync(text);
  if (check.problems.length > 0) {
    const n = check.problems.length + check.moreProblems;
    throw invalidRequest(`Invalid file: the training file has ${n} problem${n === 1 ? '' : 's'}; nothing was stored.\n${describeProblems(check)}`, 'file', 'invalid_training_file');
  }
  const kept = await ft.store.fileUsage(caller.account.id);
  if (kept.files >= MAX_FILES_PER_ACCOUNT || kept.bytes + file.bytes.byteLength > MAX_FILE_BYTES_PER_ACCOUNT) {
    throw invalidRequest(
      `File storage limit reached: an account keeps at most ${MAX_FILES_PER_ACCOUNT} files and ${MAX_FILE_BYTES_PER_ACCOUNT} bytes (this one has ${kept.files} files, ${kept.bytes} bytes). Delete files with DELETE /v1/files/{id}.`,
      'file',
      'file_storage_limit',
    );
  }
  const record = {
    id: `file-${randomBase62(24)}`,
    accountId: caller.account.id,
    filename: cleanFilename(file.filename),
    purpose,
    bytes: file.bytes.byteLength,
    lines: check.conversations.length,
    createdAt: svc.clock.now(),
  };
  await ft.store.createFile(record, file.bytes);
  return json(fileObject(record));
}

export async function listFiles(svc: ServiceParts, caller: Caller, ctx: RequestContext): Promise<Outcome> {
  const ft = fineTuningFor(svc, caller);
  const page = parsePage(ctx.query);
  const purpose = ctx.query?.purpose;
  const files = await ft.store.listFiles(caller.account.id, { after: page.after, limit: page.limit + 1, ...(purpose ? { purpose } : {}) });
  return json(listObject(files, page.limit, fileObject));
}

export async function retrieveFile(svc: ServiceParts, caller: Caller, ctx: RequestContext): Promise<Outcome> {
  const ft = fineTuningFor(svc, caller);
  const id = ctx.params.id ?? '';
  const file = await ft.store.file(caller.account.id, id);
  if (!file) throw fileNotFound(id);
  return json(fileObject(file));
}

export async function deleteFile(svc: ServiceParts, caller: Caller, ctx: RequestContext): Promise<Outcome> {
  const ft = fineTuningFor(svc, caller);
  const id = ctx.params.id ?? '';
  if (!(await ft.store.deleteFile(caller.account.id, id))) throw fileNotFound(id);
  return json({ id, object: 'file', deleted: true });
}

/** The name as sent, without any folder part or control characters, at most 255 characters. */
function cleanFilename(name: string): string {
  const base = name.split(/[\\/]/).pop()!.replace(/[\u0000-\u001f\u007f]/g, '').trim();
  return (base || 'upload.jsonl').slice(0, MAX_FILENAME_CHARS);
}
