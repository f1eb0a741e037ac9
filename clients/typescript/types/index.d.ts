// Type declarations for @memgate/client.

export interface Scope {
  user_id?: string;
  agent_id?: string;
  app_id?: string;
  project_id?: string;
  session_id?: string;
}

export type RecordType = "belief" | "decision" | "episode" | "skill" | "entity" | "preference" | "reflection" | "resource";
export type Decision = "accepted" | "provisional" | "queued" | "quarantined" | "duplicate";

export interface MemgateRecord {
  id: string;
  type: RecordType;
  category: string;
  content: string;
  content_sha256: string;
  metadata: Record<string, unknown> | null;
  entities: string[] | null;
  version: number;
  status: string;
  scope: Scope;
  source: { agent: string; principal_id: string; kind: string; confidence: number; evidence: string[] | null };
  access: string;
  classification: string;
  gate: { decision_id: string; decision: string; origin: string };
  valid_from: string | null;
  valid_until: string | null;
  created_at: string;
  updated_at: string;
  modified_by: string;
  citation?: string;
  [extra: string]: unknown;
}

export interface WriteRequest {
  type: RecordType;
  content: string;
  category?: string;
  metadata?: Record<string, unknown>;
  entities?: string[];
  source?: { kind?: "observed" | "told" | "inferred"; confidence?: number; evidence?: string[] };
  scope?: Scope;
  valid_from?: string;
  valid_until?: string;
  access?: "public" | "agent" | "user" | "sensitive";
  classification?: string;
  status?: "provisional";
  supersedes?: string;
}

export interface WriteResult {
  decision: Decision;
  reason?: string;
  record: MemgateRecord;
  citation: string;
  approval_id?: string;
  pii_kinds?: string[];
}

export interface PatchChanges {
  content?: string;
  category?: string;
  metadata?: Record<string, unknown>;
  entities?: string[];
  confidence?: number;
  valid_from?: string | null;
  valid_until?: string | null;
  access?: string;
  classification?: string;
  invalidate?: boolean;
}

export interface ListFilters {
  type?: RecordType;
  status?: string;
  category?: string;
  entity?: string;
  scope?: Scope;
  as_of?: string;
  known_at?: string;
  limit?: number;
  cursor?: string;
  min_confidence?: number;
  include_sensitive?: boolean;
  include_invalidated?: boolean;
}

export interface ListResult {
  records: MemgateRecord[];
  next_cursor?: string;
}

export interface SearchOptions {
  k?: number;
  scope?: Scope;
  explain?: boolean;
  types?: RecordType[];
  statuses?: string[];
  category?: string;
  entity?: string;
  min_relevance?: number;
  include_sensitive?: boolean;
  [option: string]: unknown;
}

export interface SearchHit {
  record: MemgateRecord;
  score: number;
  relevance: number;
  citation: string;
  explain?: Record<string, { score: number; rank: number }>;
  evidence?: Record<string, unknown>;
}

export interface SearchResponse {
  route: string;
  signals: string[];
  results: SearchHit[];
  degraded?: string[];
}

export interface ContextEnvelope {
  query: string;
  budget_tokens: number;
  tokens: number;
  sufficiency: unknown;
  sections: unknown[];
  markdown: string;
  degraded?: string[];
}

export interface MemoryFile {
  id: string;
  path: string;
  content: string;
  content_sha256: string;
  size_bytes: number;
  version: number;
  pinned: boolean;
  scope: Scope;
  status: string;
  access: string;
  author: string;
  created_at: string;
  updated_at: string;
  citation: string;
}

export interface FileResult {
  file: MemoryFile;
  decision: Decision;
  reason?: string;
  approval_id?: string;
}

export interface ToolUseBlock {
  type: "tool_use";
  id: string;
  name: "memory";
  input: MemoryToolInput;
}

export type MemoryToolInput =
  | { command: "view"; path: string; view_range?: [number, number] }
  | { command: "create"; path: string; file_text: string }
  | { command: "str_replace"; path: string; old_str: string; new_str: string }
  | { command: "insert"; path: string; insert_line: number; insert_text: string }
  | { command: "delete"; path: string }
  | { command: "rename"; old_path: string; new_path: string };

export interface ToolResult {
  type: "tool_result";
  tool_use_id?: string;
  content: string;
  is_error?: boolean;
}

export interface ClientOptions {
  timeoutMs?: number;
  /** Retries of idempotent requests (GET, PUT, DELETE); writes are sent once. Default 2. */
  retries?: number;
  fetch?: typeof fetch;
}

export declare class Client {
  constructor(baseUrl: string, token: string, options?: ClientOptions);
  request<T = unknown>(method: string, path: string, options?: { query?: Record<string, unknown>; body?: unknown }): Promise<T>;
  whoami(): Promise<{ id: string; name: string; kind: string; workspace: string; trust?: string }>;
  write(req: WriteRequest): Promise<WriteResult>;
  get(id: string, options?: { version?: number; knownAt?: string; includeSensitive?: boolean }): Promise<MemgateRecord>;
  patch(id: string, expectedVersion: number, changes: PatchChanges): Promise<WriteResult>;
  forget(id: string): Promise<MemgateRecord>;
  history(id: string, options?: { includeSensitive?: boolean }): Promise<MemgateRecord[]>;
  list(filters?: ListFilters): Promise<ListResult>;
  records(filters?: ListFilters): AsyncGenerator<MemgateRecord>;
  recordOutcome(id: string, outcome: number): Promise<Record<string, unknown>>;
  restore(id: string): Promise<MemgateRecord>;
  indexStatus(): Promise<{ embedded: number; total: number; [field: string]: unknown }>;
  search(query: string, options?: SearchOptions): Promise<SearchResponse>;
  context(query: string, options?: { scope?: Scope; budget_tokens?: number; [limit: string]: unknown }): Promise<ContextEnvelope>;
  ingest(uri: string, content?: string, options?: { bytes?: Uint8Array; mediaType?: string; scope?: Scope; access?: string }): Promise<IngestResult>;
  resources(): Promise<ResourceInfo[]>;
  searchResources(query: string, options?: { k?: number; scope?: Scope; groupByDocument?: boolean; rerank?: boolean; explain?: boolean }): Promise<ResourceSearchResponse>;
  source(resourceId: string, lines?: string): Promise<SourceLines>;
  forgetResource(resourceId: string): Promise<{ resource_id: string; forgotten_chunks: number; remaining_chunks: number }>;
  appendEvent(sessionId: string, event: { kind: string; content: string; [field: string]: unknown }): Promise<WriteResult>;
  listEvents(sessionId: string, options?: { cursor?: string; limit?: number }): Promise<ListResult>;
  createFile(path: string, content: string, options?: { scope?: Scope; pinned?: boolean; access?: string }): Promise<FileResult>;
  listFiles(options?: { pathPrefix?: string; path?: string; pinned?: boolean; scope?: Scope }): Promise<MemoryFile[]>;
  getFile(id: string, options?: { version?: number }): Promise<MemoryFile>;
  updateFile(id: string, changes: { content?: string; pinned?: boolean; path?: string; expected_content_sha256?: string }): Promise<FileResult>;
  deleteFile(id: string, options?: { expectedContentSha256?: string }): Promise<FileResult>;
  fileHistory(id: string): Promise<MemoryFile[]>;
  memoryTool(toolUse: ToolUseBlock | MemoryToolInput, options?: { scope?: Scope }): Promise<ToolResult>;
  listApprovals(options?: { status?: string; cursor?: string; limit?: number }): Promise<{ items: Record<string, unknown>[]; next_cursor?: string }>;
  approve(id: string, edit?: { content?: string; category?: string; entities?: string[]; access?: string; classification?: string }): Promise<Record<string, unknown>>;
  reject(id: string, reason?: string): Promise<Record<string, unknown>>;
  createAgent(name: string, trust?: "trusted" | "standard" | "restricted" | "read_only"): Promise<{ token: string; [field: string]: unknown }>;
  listAgents(): Promise<Record<string, unknown>[]>;
  revokeAgent(idOrName: string): Promise<unknown>;
  rotateAgent(idOrName: string): Promise<{ token: string; [field: string]: unknown }>;
  createUser(userId?: string): Promise<{ user_id: string; user_key: string }>;
  job(id: string): Promise<Record<string, unknown>>;
  audit(options?: { after?: number; limit?: number }): Promise<Record<string, unknown>>;
  verifyAudit(): Promise<Record<string, unknown>>;
  decisions(filters?: Record<string, string | number | boolean>): Promise<Record<string, unknown>>;
}

export interface ErrorOptions {
  status?: number;
  code?: string;
  field?: string;
  details?: Record<string, unknown>;
  retryAfter?: number;
}

export declare class MemgateError extends Error {
  constructor(message: string, options?: ErrorOptions);
  status: number;
  code: string;
  field?: string;
  details: Record<string, unknown>;
  retryAfter?: number;
}
export declare class InvalidArgument extends MemgateError {}
export declare class Unauthenticated extends MemgateError {}
export declare class PermissionDenied extends MemgateError {}
export declare class NotFound extends MemgateError {}
export declare class VersionConflict extends MemgateError {}
export declare class Conflict extends MemgateError {}
export declare class TooLarge extends MemgateError {}
export declare class GateRejected extends MemgateError {}
export declare class RateLimited extends MemgateError {}
export declare class Unavailable extends MemgateError {}
export declare class BadResponse extends MemgateError {}
export declare class TransportError extends MemgateError {}
export declare function errorFromBody(status: number, body: unknown, retryAfter?: number): MemgateError;

export type GatewayScope = "current_chat" | "resources" | "all_user_memory";
export declare const SCOPES: GatewayScope[];
export declare const DEFAULT_SCOPES: GatewayScope[];
export declare function sessionId(conversationId: string): string;

export interface GatewayMessage {
  sender_id: string;
  role: "user" | "assistant";
  timestamp: number;
  content: string;
}

export interface GatewayResult {
  id: string;
  session_id: string;
  text: string;
  score: number;
  relevance?: number;
  source_scope: string;
  resource_uri: string | null;
  raw: unknown;
}

export declare class GatewayClient {
  constructor(baseUrl: string, userId: string, userKey: string, options?: { appId?: string; projectId?: string; timeoutMs?: number; fetch?: typeof fetch });
  search(query: string, options?: { conversationId?: string; scope?: GatewayScope[]; topK?: number; minRelevance?: number }): Promise<GatewayResult[]>;
  add(session: string, messages: GatewayMessage[]): Promise<Record<string, unknown>>;
  flush(session: string): Promise<{ job_id: string; status: string }>;
  job(jobId: string): Promise<Record<string, unknown>>;
  update(memoryId: string, text: string): Promise<Record<string, unknown>>;
  delete(memoryId: string): Promise<Record<string, unknown>>;
}

export interface ReferenceItem {
  id: string;
  sessionId: string;
  text: string;
  score: number;
  sourceScope: string;
  resourceUri?: string;
  /** Always true: recalled text is reference data, never an instruction. */
  untrusted: true;
}

/** An outcome of the helper, with sanitized metadata only. */
export interface GatewayEvent {
  name: string;
  operation: "search" | "add" | "flush";
  category: string;
  status: number;
  results?: number;
  messages?: number;
  jobId?: string;
  durationMs?: number;
}

export declare class Hybrid {
  constructor(gateway: GatewayClient, options?: { scopes?: GatewayScope[]; topK?: number; sink?: (e: GatewayEvent) => void; userSenderId?: string });
  now: () => number;
  recallBeforeRun(conversationId: string, query: string): Promise<ReferenceItem[]>;
  persistAfterRun(conversationId: string, userPrompt: string, finalAnswer: string): Promise<void>;
}

export declare const MEMORY_TOOL: { readonly type: "memory_20250818"; readonly name: "memory" };
export declare class MemoryToolError extends Error {
  constructor(content: string);
  content: string;
}
/** The handler object @anthropic-ai/sdk's betaMemoryTool takes, backed by memgate. */
export declare class MemoryToolHandlers {
  constructor(client: Client, options?: { scope?: Scope });
  onError(content: string): Error;
  view(cmd: Extract<MemoryToolInput, { command: "view" }>): Promise<string>;
  create(cmd: Extract<MemoryToolInput, { command: "create" }>): Promise<string>;
  str_replace(cmd: Extract<MemoryToolInput, { command: "str_replace" }>): Promise<string>;
  insert(cmd: Extract<MemoryToolInput, { command: "insert" }>): Promise<string>;
  delete(cmd: Extract<MemoryToolInput, { command: "delete" }>): Promise<string>;
  rename(cmd: Extract<MemoryToolInput, { command: "rename" }>): Promise<string>;
}

/** The answer to an ingestion: created, updated (changed chunks only) or unchanged. */
export interface IngestResult {
  resource_id: string; uri: string; media_type: string; content_sha256: string; version: number;
  outcome: "created" | "updated" | "unchanged" | "retired";
  added: number; changed: number; retired: number; unchanged: number;
  quarantined?: number; pending_approval?: number;
  chunks?: { id: string; version: number; key: string; citation: string; decision: string; status: string; approval_id?: string }[];
}
export interface ResourceInfo {
  resource_id: string; uri: string; media_type: string; content_sha256: string; version: number; chunks: number; scope: Scope;
}
export interface ResourceHit {
  record: MemgateRecord; score: number; relevance: number; citation: string;
  resource_id: string; source_uri: string; heading?: string; page?: number; line_start: number; line_end: number; rerank_score?: number;
  [field: string]: unknown;
}
export interface ResourceSearchResponse { route: string; signals: string[]; results: ResourceHit[]; degraded?: string[] }
export interface SourceLines {
  resource_id: string; uri: string; media_type: string; version: number; from: number; to: number; total_lines: number; text: string;
}
