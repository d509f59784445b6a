/**
 * Grammar-constrained decoding: JSON object / JSON Schema / EBNF / tool-call grammars compiled with
 * xgrammar for a model's vocabulary, and the TokenConstraint the engine applies per token.
 * Platform-free; in unbundled Node import `./xgrammar-node.ts` once first (it installs the loader).
 */
export { compileGrammar, createGrammarConstraint, CompiledGrammar, GRAMMAR_CACHE_ENTRIES } from './compile.ts';
export { GrammarConstraint, type ConstraintOptions } from './constraint.ts';
export { checkEbnf } from './ebnf-check.ts';
export { GrammarBusyError, GrammarEngineError, GrammarInputError } from './errors.ts';
export { inProcessGrammars, type ConstraintHandle, type GrammarCompiler, type GrammarHandle } from './handle.ts';
export { tokenTableData, TokenTable, type GrammarTokenizer, type TokenTableData } from './token-table.ts';
export { prepareJsonSchema, type JsonSchemaOptions, type PreparedSchema } from './json-schema.ts';
export type { GrammarSpec, ToolChoice, ToolFunction } from './spec.ts';
export { formatToolCall, jsonOneLine, toolCallPrefix, TOOL_CALL_CLOSE, TOOL_CALL_OPEN, TOOL_CALL_SEPARATOR, TOOL_CALL_SUFFIX } from './tool-format.ts';
export { parseToolCalls, type ParsedToolCall, type ParsedToolOutput } from './tool-parse.ts';
export { grammarVocabulary, vocabularyCoverage, type GrammarVocabulary, type VocabularyCoverage } from './vocabulary.ts';
export { setXGrammarLoader, xgrammarRuntime, type XGrammarApi, type XGrammarLoader, type XGrammarRuntime } from './xgrammar.ts';
