// The memory tool for @anthropic-ai/sdk's tool runner, backed by memgate:
//
//   const runner = anthropic.beta.messages.toolRunner({ model, max_tokens,
//     messages, tools: [memgateMemoryTool(client, { scope: { user_id } })] });
//
// @anthropic-ai/sdk is a peer dependency of this entry point only.
import { betaMemoryTool } from "@anthropic-ai/sdk/helpers/beta/memory";
import { ToolError } from "@anthropic-ai/sdk/lib/tools/ToolError";
import { MemoryToolHandlers } from "./memorytool.js";

export class AnthropicMemoryToolHandlers extends MemoryToolHandlers {
  onError(content) { return new ToolError(content); }
}

export function memgateMemoryTool(client, { scope, ...extraProps } = {}) {
  return betaMemoryTool(new AnthropicMemoryToolHandlers(client, { scope }), Object.keys(extraProps).length ? extraProps : undefined);
}
