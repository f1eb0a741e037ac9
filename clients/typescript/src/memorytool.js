// Claude's memory tool (memory_20250818) backed by memgate memory files,
// as the handler object @anthropic-ai/sdk's betaMemoryTool takes: one
// method per command, each returning the tool_result text. A failed
// command throws an error whose message is memgate's result text, which
// the SDK's tool runner sends back with is_error (see ./anthropic.js for
// the ready-made tool).

export const MEMORY_TOOL = Object.freeze({ type: "memory_20250818", name: "memory" });

export class MemoryToolError extends Error {
  constructor(content) {
    super(content);
    this.name = "MemoryToolError";
    this.content = content;
  }
}

export class MemoryToolHandlers {
  #client; #scope;
  constructor(client, { scope } = {}) {
    this.#client = client;
    this.#scope = scope;
  }
  async #run(input) {
    const res = await this.#client.memoryTool(input, { scope: this.#scope });
    if (res.is_error) throw this.onError(res.content);
    return res.content;
  }
  /** The error thrown for a failed command; ./anthropic.js returns the SDK's ToolError. */
  onError(content) { return new MemoryToolError(content); }
  view(cmd) { return this.#run(cmd); }
  create(cmd) { return this.#run(cmd); }
  str_replace(cmd) { return this.#run(cmd); }
  insert(cmd) { return this.#run(cmd); }
  delete(cmd) { return this.#run(cmd); }
  rename(cmd) { return this.#run(cmd); }
}
