// @memgate/client: the TypeScript/JavaScript client for memgate. ESM,
// zero runtime dependencies (the global fetch), Node 20+.
export { Client } from "./client.js";
export { GatewayClient, Hybrid, sessionId, SCOPES, DEFAULT_SCOPES } from "./gateway.js";
export * from "./errors.js";
export { MemoryToolHandlers, MemoryToolError, MEMORY_TOOL } from "./memorytool.js";
