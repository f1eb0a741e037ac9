// ui.js: small DOM helpers shared by the screens. Text always goes in as
// text nodes (never innerHTML), so stored content cannot run as markup.
export function h(tag, attrs, ...kids) {
  const ns = attrs && attrs.svg ? "http://www.w3.org/2000/svg" : null;
  const el = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "svg" || v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.setAttribute("class", v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === undefined || kid === null || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

export function clear(el, ...kids) { el.replaceChildren(...kids.flat(Infinity).filter((k) => k)); return el; }

// States every screen shows: loading, empty and error.
export const loading = (what) => h("p", { class: "state loading", role: "status" }, "Loading " + what + "…");
export const empty = (msg) => h("p", { class: "state empty" }, msg);
export const failed = (err) => h("p", { class: "state error", role: "alert" }, "Error: " + (err && err.message || err));

// load runs fn, showing loading in el while it runs and the error if it fails.
export async function load(el, what, fn) {
  clear(el, loading(what));
  try { await fn(); } catch (e) { clear(el, failed(e)); }
}

export function toast(msg) {
  const t = document.getElementById("toast");
  const d = h("div", {}, msg);
  t.append(d);
  setTimeout(() => d.remove(), 6000);
}

export function when(t) { return t ? new Date(t).toLocaleString() : "—"; }

export function field(label, input) { return h("label", {}, label, input); }

// confirmDialog asks before something irreversible; resolves true on OK.
export function confirmDialog(title, body, okLabel) {
  return new Promise((resolve) => {
    const ok = h("button", { type: "button", class: "danger", "data-confirm": "ok" }, okLabel || "Confirm");
    const cancel = h("button", { type: "button" }, "Cancel");
    const dlg = h("dialog", { "aria-labelledby": "dlg-title" }, h("h2", { id: "dlg-title" }, title), h("p", {}, body), h("div", { class: "bar" }, ok, cancel));
    const done = (v) => { dlg.close(); dlg.remove(); resolve(v); };
    ok.addEventListener("click", () => done(true));
    cancel.addEventListener("click", () => done(false));
    dlg.addEventListener("cancel", () => done(false));
    document.body.append(dlg);
    dlg.showModal();
    cancel.focus();
  });
}

// diff marks the words b adds to a (ins) and removes from it (del).
export function diff(a, b) {
  const x = (a || "").split(/(\s+)/), y = (b || "").split(/(\s+)/);
  if (x.length * y.length > 4e6) return [h("del", {}, a), h("ins", {}, b)];
  const n = x.length, m = y.length;
  const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--)
    L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  const push = (tag, s) => {
    const last = out[out.length - 1];
    if (last && last.tag === tag) last.s += s; else out.push({ tag, s });
  };
  while (i < n && j < m) {
    if (x[i] === y[j]) { push("", x[i]); i++; j++; }
    else if (L[i + 1][j] >= L[i][j + 1]) { push("del", x[i]); i++; }
    else { push("ins", y[j]); j++; }
  }
  while (i < n) push("del", x[i++]);
  while (j < m) push("ins", y[j++]);
  return out.map((p) => p.tag ? h(p.tag, {}, p.s) : document.createTextNode(p.s));
}

// highlight wraps the PII spans (UTF-16 offsets from the server) in marks.
export function highlight(text, spans) {
  if (!spans || !spans.length) return [text];
  const out = [];
  let at = 0;
  for (const s of [...spans].sort((a, b) => a.start - b.start)) {
    if (s.start < at) continue;
    out.push(text.slice(at, s.start));
    out.push(h("mark", { class: "pii", title: "PII: " + s.kind }, text.slice(s.start, s.end)));
    at = s.end;
  }
  out.push(text.slice(at));
  return out;
}

export function copyButton(text) {
  const b = h("button", { type: "button" }, "Copy");
  b.addEventListener("click", async () => {
    try { await navigator.clipboard.writeText(text); b.textContent = "Copied"; } catch { b.textContent = "Select and copy"; }
  });
  return b;
}

// shownOnce displays a new secret with a copy button; it is in the page
// until the operator leaves the screen, and never stored.
export function shownOnce(label, secret) {
  return h("div", { class: "card", role: "alert" },
    h("p", {}, label + " — shown once, copy it now:"),
    h("p", { class: "secret", "data-secret": "" }, secret), copyButton(secret));
}
