/**
 * `response_format` as an output plan: `json_object` (any JSON object), `json_schema` (valid under its
 * schema), and the `{"type": "json_object", "schema": ...}` form llama.cpp and WebLLM clients send (the
 * schema as an object or as JSON text). Schemas are always compiled strictly: a keyword the grammar
 * cannot enforce is a 400 naming where it is, never dropped, so the output always validates.
 */
import { invalidRequest } from '../errors.ts';
import type { OutputPlan } from './plan.ts';

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object'; schema?: Record<string, unknown> | string | null }
  | { type: 'json_schema'; json_schema: { name: string; schema?: Record<string, unknown> | null } };

export function responseFormatPlan(rf: ResponseFormat): OutputPlan | undefined {
  if (rf.type === 'text') return undefined;
  const [schema, param] = rf.type === 'json_schema' ? [rf.json_schema.schema, 'response_format.json_schema.schema'] : [readSchema(rf.schema), 'response_format.schema'];
  return {
    // The caller wrote the prompt for this format; nothing is added to it.
    instructions: [],
    grammar: () => (schema != null ? { type: 'json_schema', schema, strict: true } : { type: 'json_object' }),
    blame: (p) => (p === 'schema' ? param : 'response_format'),
    source: 'response_format',
    formatStop: false,
    confidence: false,
    features: [],
  };
}

function readSchema(s: Record<string, unknown> | string | null | undefined): unknown {
  if (typeof s !== 'string') return s;
  try {
    return JSON.parse(s);
  } catch (e) {
    throw invalidRequest(`Invalid 'response_format.schema': a string schema must be JSON text (${(e as Error).message}).`, 'response_format.schema');
  }
}
