// The REST v1 client: records, search, context, events, memory files and
// Claude's memory tool, approvals and agents (operators).
import { Transport, clean, need } from "./transport.js";

const seg = (v) => {
  if (!v) throw new TypeError("id must not be empty");
  return encodeURIComponent(v);
};
const scopeQuery = (s) => clean({ ...(s ?? {}) });

export class Client {
  #t;
  constructor(baseUrl, token, { timeoutMs, retries, fetch } = {}) {
    if (!token) throw new TypeError("token is required");
    this.#t = new Transport(baseUrl, { timeoutMs, retries, fetch, headers: { Authorization: `Bearer ${token}` } });
  }

  toString() { return `memgate.Client(${this.#t.base})`; }
  toJSON() { return { baseUrl: this.#t.base }; }
  [Symbol.for("nodejs.util.inspect.custom")]() { return this.toString(); }

  /** Any REST call, for routes this client has no method for. */
  request(method, path, opts) { return this.#t.request(method, path, opts); }

  whoami() { return this.#t.request("GET", "/v1/whoami"); }

  write(req) { return this.#t.request("POST", "/v1/records", { body: { scope: {}, ...req } }); }
  get(id, { version, knownAt, includeSensitive } = {}) {
    return this.#t.request("GET", `/v1/records/${seg(id)}`, { query: { version, known_at: knownAt, include_sensitive: includeSensitive || undefined } });
  }
  patch(id, expectedVersion, changes) {
    return this.#t.request("PATCH", `/v1/records/${seg(id)}`, { body: { expected_version: expectedVersion, ...changes } });
  }
  async forget(id) { return need(await this.#t.request("DELETE", `/v1/records/${seg(id)}`), "record", "forget"); }
  async history(id, { includeSensitive } = {}) {
    const d = await this.#t.request("GET", `/v1/records/${seg(id)}/history`, { query: { include_sensitive: includeSensitive || undefined } });
    return need(d, "versions", "history");
  }
  list(filters = {}) {
    const { scope, ...rest } = filters;
    return this.#t.request("GET", "/v1/records", { query: { ...rest, ...scopeQuery(scope) } });
  }
  async *records(filters = {}) {
    let cursor;
    for (;;) {
      const page = await this.list({ ...filters, cursor });
      yield* page.records;
      if (!page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }
  /** How following a procedure (a skill record) went: 1 success, 0 failure, or between. */
  recordOutcome(id, outcome) { return this.#t.request("POST", `/v1/records/${seg(id)}/outcome`, { body: { outcome } }); }
  async restore(id) { return need(await this.#t.request("POST", `/v1/records/${seg(id)}/restore`), "record", "restore"); }

  /** Search index sizes and embedding progress (embedded of total). */
  indexStatus() { return this.#t.request("GET", "/v1/index"); }
  search(query, opts = {}) { return this.#t.request("POST", "/v1/search", { body: clean({ query, ...opts }) }); }
  async context(query, opts = {}) {
    const d = await this.#t.request("POST", "/v1/context", { body: clean({ query, ...opts }) });
    need(d, "sections", "context");
    return d;
  }

  /** Ingests one document (text, or bytes such as a PDF) through the gate; an unchanged one writes nothing. */
  async ingest(uri, content, { bytes, mediaType, scope, access } = {}) {
    if ((content === undefined) === (bytes === undefined)) throw new TypeError("give content or bytes");
    const body = clean({ uri, media_type: mediaType, scope, access });
    if (bytes !== undefined) body.content_base64 = Buffer.from(bytes).toString("base64");
    else body.content = content;
    const d = await this.#t.request("POST", "/v1/resources", { body });
    need(d, "resource_id", "ingest");
    return d;
  }
  async resources() { return need(await this.#t.request("GET", "/v1/resources"), "resources", "resources"); }
  /** Searches ingested documents; each hit cites res://...#L<a>-L<b>. */
  async searchResources(query, { k, scope, groupByDocument, rerank, explain } = {}) {
    const d = await this.#t.request("POST", "/v1/resources/search",
      { body: clean({ query, k, scope, group_by_document: groupByDocument, rerank, explain }) });
    need(d, "results", "search resources");
    return d;
  }
  /** The cited lines ("a-b"; none for all) of the indexed version of a document. */
  source(resourceId, lines) { return this.#t.request("GET", `/v1/resources/${seg(resourceId)}/source`, { query: { lines } }); }
  /** Erases a document: every chunk, version, vector and index entry. */
  forgetResource(resourceId) { return this.#t.request("DELETE", `/v1/resources/${seg(resourceId)}`); }

  appendEvent(sessionId, event) { return this.#t.request("POST", `/v1/sessions/${seg(sessionId)}/events`, { body: event }); }
  listEvents(sessionId, { cursor, limit } = {}) { return this.#t.request("GET", `/v1/sessions/${seg(sessionId)}/events`, { query: { cursor, limit } }); }

  createFile(path, content, { scope, pinned, access } = {}) {
    return this.#t.request("POST", "/v1/files", { body: clean({ path, content, scope, pinned, access }) });
  }
  async listFiles({ pathPrefix, path, pinned, scope } = {}) {
    const d = await this.#t.request("GET", "/v1/files", { query: { path_prefix: pathPrefix, path, pinned, ...scopeQuery(scope) } });
    return need(d, "files", "list files");
  }
  async getFile(id, { version } = {}) { return need(await this.#t.request("GET", `/v1/files/${seg(id)}`, { query: { version } }), "file", "get file"); }
  updateFile(id, changes) { return this.#t.request("PATCH", `/v1/files/${seg(id)}`, { body: changes }); }
  deleteFile(id, { expectedContentSha256 } = {}) {
    return this.#t.request("DELETE", `/v1/files/${seg(id)}`, { query: { expected_content_sha256: expectedContentSha256 } });
  }
  async fileHistory(id) { return need(await this.#t.request("GET", `/v1/files/${seg(id)}/history`), "versions", "file history"); }

  /**
   * Runs one call of Claude's memory tool: a tool_use block or its input.
   * A failed command is a result with is_error, not an exception.
   */
  async memoryTool(toolUse, { scope } = {}) {
    const res = await this.#t.request("POST", "/v1/memory-tool", { query: scopeQuery(scope), body: toolUse });
    need(res, "content", "memory tool");
    if (toolUse.type === "tool_use") res.tool_use_id = toolUse.id;
    return res;
  }

  async listApprovals({ status, cursor, limit } = {}) {
    const d = await this.#t.request("GET", "/v1/approvals", { query: { status, cursor, limit } });
    need(d, "items", "approvals");
    return d;
  }
  approve(id, edit) { return this.#t.request("POST", `/v1/approvals/${seg(id)}/approve`, { body: edit }); }
  reject(id, reason) { return this.#t.request("POST", `/v1/approvals/${seg(id)}/reject`, { body: reason ? { reason } : undefined }); }
  createAgent(name, trust) { return this.#t.request("POST", "/v1/agents", { body: clean({ name, trust }) }); }
  async listAgents() { return need(await this.#t.request("GET", "/v1/agents"), "agents", "agents"); }
  revokeAgent(idOrName) { return this.#t.request("DELETE", `/v1/agents/${seg(idOrName)}`); }
  rotateAgent(idOrName) { return this.#t.request("POST", `/v1/agents/${seg(idOrName)}/rotate`); }
  async createUser(userId) {
    const d = await this.#t.request("POST", "/users", { body: clean({ user_id: userId }) });
    need(d, "user_key", "create user");
    return d;
  }
  job(id) { return this.#t.request("GET", `/v1/jobs/${seg(id)}`); }
  audit({ after, limit } = {}) { return this.#t.request("GET", "/v1/audit", { query: { after, limit } }); }
  verifyAudit() { return this.#t.request("GET", "/v1/audit/verify"); }
  decisions(filters = {}) { return this.#t.request("GET", "/v1/decisions", { query: filters }); }
}
