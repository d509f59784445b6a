/** A prepared JSON schema as EBNF: xgrammar's converter, with our number and string grammars spliced in. */
import { GrammarEngineError, GrammarInputError } from './errors.ts';
import type { PreparedSchema } from './json-schema.ts';
import type { XGrammarRuntime } from './xgrammar.ts';

/**
 * EBNF for a prepared schema: xgrammar's converter, then our rules in place of the markers. The
 * converter writes a marker string `"__svc_number_0__"` as the literal `"\"__svc_number_0__\""`.
 */
export async function schemaEbnf(rt: XGrammarRuntime, prepared: PreparedSchema, param: string): Promise<string> {
  const text = JSON.stringify(prepared.schema);
  let ebnf = await rt.run(
    (api) => api.Testings._jsonSchemaToEBNF(text, false, -1, [', ', ': '], false),
    (m) => new GrammarInputError(`${param}: xgrammar could not convert the schema: ${m}`, param),
  );
  for (const [marker, { rule, rules }] of prepared.splices) {
    const literal = `\\"${marker}\\"`;
    if (!ebnf.includes(literal)) throw new GrammarEngineError(`the marker ${marker} is missing from xgrammar's grammar`);
    ebnf = `${ebnf.split(literal).join(`" ${rule} "`)}\n${rules}`;
  }
  return ebnf;
}
