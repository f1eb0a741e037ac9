// HTTP over the global fetch: JSON in and out, error mapping, and
// retries for idempotent requests only (GET, PUT, DELETE) on network
// failures and 429/502/503/504, honouring Retry-After.
import { BadResponse, TransportError, errorFromBody } from "./errors.js";

const IDEMPOTENT = new Set(["GET", "HEAD", "PUT", "DELETE"]);
const RETRY = new Set([429, 502, 503, 504]);

export class Transport {
  constructor(baseUrl, { timeoutMs = 30000, retries = 2, headers = {}, fetch: f } = {}) {
    const u = new URL(baseUrl);
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new TypeError("baseUrl must be an http(s) URL");
    this.base = baseUrl.replace(/\/+$/, "");
    this.timeoutMs = timeoutMs;
    this.retries = Math.max(0, retries);
    this.headers = headers;
    this.fetch = f ?? globalThis.fetch;
  }

  async request(method, path, { query, body } = {}) {
    let url = this.base + path;
    if (query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
      const s = q.toString();
      if (s) url += "?" + s;
    }
    const headers = { Accept: "application/json", ...this.headers };
    let data;
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      data = JSON.stringify(body);
    }
    const attempts = 1 + (IDEMPOTENT.has(method) ? this.retries : 0);
    for (let i = 0; ; i++) {
      const last = i === attempts - 1;
      let resp;
      try {
        resp = await this.fetch(url, { method, headers, body: data, signal: AbortSignal.timeout(this.timeoutMs) });
      } catch (e) {
        if (!last) {
          await backoff(i);
          continue;
        }
        throw new TransportError(`${method} ${path}: ${e?.name ?? "network error"}`);
      }
      const text = await resp.text();
      if (!resp.ok) {
        const ra = Number(resp.headers.get("retry-after"));
        const retryAfter = Number.isFinite(ra) && resp.headers.has("retry-after") ? ra : undefined;
        if (RETRY.has(resp.status) && !last) {
          await backoff(i, retryAfter);
          continue;
        }
        let parsed;
        try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = undefined; }
        throw errorFromBody(resp.status, parsed, retryAfter);
      }
      if (!text) return undefined;
      try {
        return JSON.parse(text);
      } catch {
        throw new BadResponse(`${method} ${path}: response is not JSON`, { status: resp.status });
      }
    }
  }
}

function backoff(attempt, retryAfter) {
  const d = retryAfter !== undefined ? retryAfter * 1000 : 100 * 2 ** attempt * (0.5 + Math.random());
  return new Promise((r) => setTimeout(r, Math.min(d, 5000)));
}

export function need(obj, key, what) {
  if (!obj || typeof obj !== "object" || !(key in obj)) throw new BadResponse(`${what}: response lacks ${key}`);
  return obj[key];
}

export function clean(o) {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null));
}
