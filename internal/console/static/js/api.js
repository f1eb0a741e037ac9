// api.js: the one way the page talks to memgate. Requests go to the same
// origin with the session cookie (HttpOnly: this script never sees it);
// every request that changes state carries the session's CSRF token,
// which lives only in this module's memory.
let csrf = "";
let onSignedOut = () => {};

export function setSession(token, signedOut) {
  csrf = token || "";
  if (signedOut) onSignedOut = signedOut;
}

export class APIError extends Error {
  constructor(status, body) {
    super((body && body.error && body.error.message) || ("HTTP " + status));
    this.status = status;
    this.code = body && body.error && body.error.code;
    this.details = (body && body.error && body.error.details) || {};
  }
}

export async function call(method, path, body) {
  const headers = { "Accept": "application/json" };
  if (method !== "GET" && method !== "HEAD") headers["X-CSRF-Token"] = csrf;
  const init = { method, headers, credentials: "same-origin", cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  if (res.status === 204) return null;
  const type = res.headers.get("Content-Type") || "";
  const data = type.includes("json") ? await res.json() : await res.text();
  if (!res.ok) {
    if (res.status === 401 && !path.startsWith("/console/session")) onSignedOut();
    throw new APIError(res.status, data);
  }
  return data;
}

export const get = (p) => call("GET", p);
export const post = (p, b) => call("POST", p, b === undefined ? {} : b);
export const del = (p) => call("DELETE", p);
export const patch = (p, b) => call("PATCH", p, b);

export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === "") continue;
    if (Array.isArray(v)) v.forEach((x) => u.append(k, x)); else u.set(k, v);
  }
  const s = u.toString();
  return s ? "?" + s : "";
}
