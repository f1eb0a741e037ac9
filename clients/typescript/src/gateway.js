// The Memory Gateway client and the recall/persist helper with the Go
// SDK's failure rules: recall never fails the run, persist sends exactly
// one add (never retried) and flushes only if it succeeded, and every
// outcome is an event with sanitized metadata (never the key, the user id
// or a body).
import { Transport, clean, need } from "./transport.js";
import { BadResponse, MemgateError, TransportError } from "./errors.js";

export const SCOPES = ["current_chat", "resources", "all_user_memory"];
export const DEFAULT_SCOPES = ["current_chat", "all_user_memory"];
export const sessionId = (conversationId) => "chat:" + conversationId;

export class GatewayClient {
  #t; #id; #group;
  constructor(baseUrl, userId, userKey, { appId, projectId, timeoutMs = 10000, fetch } = {}) {
    if (!userId || !userKey) throw new TypeError("userId and userKey are required");
    this.#t = new Transport(baseUrl, { timeoutMs, retries: 0, fetch });
    this.#id = { user_id: userId, user_key: userKey };
    this.#group = clean({ app_id: appId, project_id: projectId });
  }
  toString() { return `memgate.GatewayClient(${this.#t.base})`; }
  toJSON() { return {}; }
  [Symbol.for("nodejs.util.inspect.custom")]() { return this.toString(); }
  #post(path, body) { return this.#t.request("POST", path, { body: { ...this.#id, ...this.#group, ...clean(body) } }); }
  async search(query, { conversationId, scope, topK, minRelevance } = {}) {
    const d = await this.#post("/memories/search", { query, conversation_id: conversationId, scope, top_k: topK, min_relevance: minRelevance });
    const r = need(d, "results", "gateway search");
    if (!Array.isArray(r)) throw new BadResponse("gateway search: results is not a list");
    return r;
  }
  add(session, messages) { return this.#post("/memories/add", { session_id: session, messages }); }
  async flush(session) {
    const d = await this.#post("/memories/flush", { session_id: session });
    need(d, "job_id", "flush");
    return d;
  }
  job(jobId) { return this.#post("/memories/jobs/get", { job_id: jobId }); }
  update(memoryId, text) { return this.#post("/memories/update", { memory_id: memoryId, text }); }
  delete(memoryId) { return this.#post("/memories/delete", { memory_id: memoryId }); }
}

function classify(e) {
  if (e instanceof TransportError) return ["network", 0];
  if (e instanceof BadResponse) return ["bad_response", e.status];
  if (e instanceof MemgateError) {
    const s = e.status;
    if (s === 401 || s === 403) return ["auth", s];
    if (s === 429) return ["rate_limited", s];
    if (s >= 500) return ["server", s];
    return ["rejected", s];
  }
  return ["bad_response", 0];
}

export class Hybrid {
  #gw; #scopes; #topK; #sink; #userSender; #lastMs = 0;
  constructor(gateway, { scopes = DEFAULT_SCOPES, topK = 8, sink, userSenderId = "user" } = {}) {
    if (!scopes.length || scopes.some((s) => !SCOPES.includes(s))) throw new RangeError("scopes must be a non-empty subset of " + SCOPES.join(", "));
    if (!(topK >= 1 && topK <= 100)) throw new RangeError("topK must be between 1 and 100");
    this.#gw = gateway; this.#scopes = scopes; this.#topK = topK; this.#sink = sink; this.#userSender = userSenderId;
    this.now = () => Date.now();
  }
  #emit(e) { try { this.#sink?.({ category: "", status: 0, ...e }); } catch { /* a sink never breaks the run */ } }

  /** At most topK untrusted reference items; [] on any failure. */
  async recallBeforeRun(conversationId, query) {
    if (!conversationId?.trim() || !query?.trim()) {
      this.#emit({ name: "memory_gateway_recall_failed", operation: "search", category: "invalid_input" });
      return [];
    }
    const start = performance.now();
    try {
      const res = await this.#gw.search(query, { conversationId, scope: this.#scopes, topK: this.#topK });
      const items = res.slice(0, this.#topK).map((r) => ({
        id: String(r.id), sessionId: String(r.session_id ?? ""), text: String(r.text), score: Number(r.score ?? 0),
        sourceScope: String(r.source_scope ?? ""), resourceUri: r.resource_uri ?? undefined, untrusted: true,
      }));
      this.#emit({ name: "memory_gateway_recall_succeeded", operation: "search", status: 200, results: items.length, durationMs: performance.now() - start });
      return items;
    } catch (e) {
      const [category, status] = classify(e);
      this.#emit({ name: "memory_gateway_recall_failed", operation: "search", category, status, durationMs: performance.now() - start });
      return [];
    }
  }

  #next() {
    let ms = Math.floor(this.now());
    if (ms <= this.#lastMs) ms = this.#lastMs + 1;
    this.#lastMs = Math.max(ms, 1);
    return this.#lastMs;
  }

  /** One add (prompt then answer), one flush only if it succeeded. Never throws. */
  async persistAfterRun(conversationId, userPrompt, finalAnswer) {
    if (!conversationId?.trim() || !userPrompt?.trim() || !finalAnswer?.trim()) {
      this.#emit({ name: "memory_gateway_add_failed", operation: "add", category: "invalid_input" });
      return;
    }
    const u = this.#next(), a = this.#next();
    const session = sessionId(conversationId);
    let start = performance.now();
    try {
      await this.#gw.add(session, [
        { sender_id: this.#userSender, role: "user", timestamp: u, content: userPrompt },
        { sender_id: "assistant", role: "assistant", timestamp: a, content: finalAnswer },
      ]);
    } catch (e) {
      const [category, status] = classify(e);
      this.#emit({ name: "memory_gateway_add_failed", operation: "add", category, status, messages: 2, durationMs: performance.now() - start });
      return;
    }
    this.#emit({ name: "memory_gateway_add_succeeded", operation: "add", status: 200, messages: 2, durationMs: performance.now() - start });
    start = performance.now();
    try {
      const fr = await this.#gw.flush(session);
      this.#emit({ name: "memory_gateway_flush_succeeded", operation: "flush", status: 202, jobId: fr.job_id, durationMs: performance.now() - start });
    } catch (e) {
      const [category, status] = classify(e);
      this.#emit({ name: "memory_gateway_flush_failed", operation: "flush", category, status, durationMs: performance.now() - start });
    }
  }
}
