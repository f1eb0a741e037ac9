import type { BetaRunnableTool } from "@anthropic-ai/sdk/lib/tools/BetaRunnableTool";
import type { BetaMemoryTool20250818Command } from "@anthropic-ai/sdk/resources/beta";
import { Client, MemoryToolHandlers, Scope } from "./index.js";

export declare class AnthropicMemoryToolHandlers extends MemoryToolHandlers {}

/** Claude's memory tool for the SDK's tool runner, backed by memgate memory files. */
export declare function memgateMemoryTool(client: Client, options?: { scope?: Scope; [extraProp: string]: unknown }): BetaRunnableTool<BetaMemoryTool20250818Command>;
