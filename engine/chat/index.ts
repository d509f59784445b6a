/** Chat messages to prompts: the model's Jinja chat template, or a documented fallback format. */
export { contentText } from './content.ts';
export { FALLBACK_STOP, renderFallback, TOOLS_INTRO } from './fallback.ts';
export { encodeRendered, PromptTooLongError, renderChat, type ChatModel, type RenderChatOptions } from './render.ts';
export { ChatTemplateError, renderTemplate, type TemplateInput } from './template.ts';
export type { ChatContent, ChatMessage, ChatTool, ChatToolCall, RenderedChat } from './types.ts';
