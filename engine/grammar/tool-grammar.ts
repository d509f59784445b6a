/**
 * The grammar of tool calls (wire format in tool-format.ts), as an xgrammar structural tag: one tag per
 * function, `toolCallPrefix(name)` + arguments + TOOL_CALL_SUFFIX, the arguments being our checked
 * schema grammar (json-schema.ts, numbers included) for that function's `parameters`.
 *
 * - `auto`: free text in which `<tool_call>` triggers a call (any text before it is the answer's
 *   content). The model decides at its first tokens: a plain answer, or `<tool_call>` and a call.
 * - `required`: one or more calls and nothing else; `{ name }`: exactly one call of that function.
 * - `parallel: false`: at most one call; then only the end may follow.
 */
import { GrammarInputError } from './errors.ts';
import { prepareJsonSchema } from './json-schema.ts';
import { schemaEbnf } from './schema-ebnf.ts';
import type { GrammarSpec, ToolFunction } from './spec.ts';
import { TOOL_CALL_OPEN, TOOL_CALL_SEPARATOR, TOOL_CALL_SUFFIX, toolCallPrefix } from './tool-format.ts';
import type { XGrammarRuntime } from './xgrammar.ts';

type ToolsSpec = Extract<GrammarSpec, { type: 'tools' }>;

/** OpenAI's rule for function names. */
const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;

const NO_ARGUMENTS = { type: 'object', properties: {} };

export async function toolCallStructure(rt: XGrammarRuntime, spec: ToolsSpec, warnings: string[]): Promise<Record<string, unknown>> {
  const tools = checkTools(spec);
  const choice = spec.choice;
  if ((choice as unknown) === 'none') throw new GrammarInputError('tool_choice "none" needs no grammar: generate without one', 'tool_choice');
  let chosen = tools;
  if (typeof choice === 'object') {
    if (choice === null || typeof choice.name !== 'string') throw new GrammarInputError('tool_choice must be "auto", "required" or { name }', 'tool_choice');
    chosen = tools.filter((t) => t.name === choice.name);
    if (chosen.length === 0) throw new GrammarInputError(`tool_choice names "${choice.name}", which is not among the tools (${tools.map((t) => t.name).join(', ')})`, 'tool_choice');
  } else if (choice !== 'auto' && choice !== 'required') {
    throw new GrammarInputError(`tool_choice must be "auto", "required" or { name } (got ${JSON.stringify(choice)})`, 'tool_choice');
  }
  const tags = [];
  for (const [i, tool] of tools.entries()) {
    if (!chosen.includes(tool)) continue;
    const param = `tools[${i}].function.parameters`;
    const prepared = prepareJsonSchema(tool.parameters ?? NO_ARGUMENTS, { strict: tool.strict === true, param });
    warnings.push(...prepared.warnings);
    const grammar = await schemaEbnf(rt, prepared, param);
    // The schema grammar writes the arguments; the tag adds what surrounds them.
    tags.push({ type: 'tag', begin: toolCallPrefix(tool.name), content: { type: 'grammar', grammar }, end: TOOL_CALL_SUFFIX });
  }
  const single = spec.parallel === false || typeof choice === 'object';
  const format =
    choice === 'auto'
      ? { type: 'triggered_tags', triggers: [TOOL_CALL_OPEN], tags, at_least_one: false, stop_after_first: single }
      : { type: 'tags_with_separator', tags, separator: TOOL_CALL_SEPARATOR, at_least_one: true, stop_after_first: single };
  return { type: 'structural_tag', format };
}

function checkTools(spec: ToolsSpec): ToolFunction[] {
  if (!Array.isArray(spec.tools) || spec.tools.length === 0) throw new GrammarInputError('tools must be a non-empty array of functions', 'tools');
  const seen = new Set<string>();
  return spec.tools.map((t, i) => {
    if (!t || typeof t !== 'object') throw new GrammarInputError(`tools[${i}] must be an object`, 'tools');
    if (typeof t.name !== 'string' || !FUNCTION_NAME.test(t.name)) {
      throw new GrammarInputError(`tools[${i}].function.name must be 1-64 letters, digits, "_" or "-" (got ${JSON.stringify(t.name)})`, 'tools');
    }
    if (seen.has(t.name)) throw new GrammarInputError(`tools[${i}].function.name "${t.name}" is used by two tools`, 'tools');
    seen.add(t.name);
    return t;
  });
}
