// A LangGraph.js store backed by memgate: items are memgate memory files
// (versioned, gated, audited, searchable by meaning).
//
// A namespace maps to memgate's scope keys: its first elements set the
// keys named by `scopeKeys` (default ["user_id"]), in order; the rest, and
// the item's key, make the file's path, /memories/langgraph/<rest...>/<key>.
// So the common namespace [userId, "memories"] is user-scoped memory that
// memgate's access rules, forget_subject and exports treat as the user's.
//
// @langchain/langgraph is a peer dependency of this entry point only.
import { BaseStore } from "@langchain/langgraph";

const ROOT = "/memories/langgraph";
const enc = (s) => encodeURIComponent(s).replace(/\./g, "%2E");
const dec = (s) => decodeURIComponent(s);

export class MemgateStore extends BaseStore {
  #client; #keys;
  constructor(client, { scopeKeys = ["user_id"] } = {}) {
    super();
    this.#client = client;
    this.#keys = scopeKeys;
  }

  #split(namespace) {
    if (!Array.isArray(namespace) || namespace.some((s) => typeof s !== "string" || s === "")) {
      throw new TypeError("namespace must be an array of non-empty strings");
    }
    const scope = {};
    this.#keys.forEach((k, i) => { if (i < namespace.length) scope[k] = namespace[i]; });
    return { scope, dirs: namespace.slice(this.#keys.length) };
  }
  #path(namespace, key) {
    const { dirs } = this.#split(namespace);
    return [ROOT, ...dirs.map(enc), enc(key)].join("/");
  }
  // The namespace and key a file stands for, or null when it is not ours
  // or not live (a deleted file's record stays, marked deleted).
  #item(file) {
    if (file.metadata?.deleted || file.invalidated_at || file.deleted) return null;
    const path = file.path ?? file.metadata?.file_path;
    if (typeof path !== "string" || !path.startsWith(ROOT + "/")) return null;
    const parts = path.slice(ROOT.length + 1).split("/").map(dec);
    const scope = file.scope ?? {};
    const head = [];
    for (const k of this.#keys) {
      if (!scope[k]) break;
      head.push(scope[k]);
    }
    let value;
    try { value = JSON.parse(file.content); } catch { return null; }
    return {
      namespace: [...head, ...parts.slice(0, -1)], key: parts.at(-1), value,
      createdAt: new Date(file.created_at), updatedAt: new Date(file.updated_at ?? file.created_at),
    };
  }

  async #find(namespace, key) {
    const { scope } = this.#split(namespace);
    const files = await this.#client.listFiles({ path: this.#path(namespace, key), scope });
    return files[0] ?? null;
  }

  async batch(operations) {
    const out = [];
    for (const op of operations) {
      if ("value" in op) out.push(await this.#put(op));
      else if ("namespacePrefix" in op) out.push(await this.#search(op));
      else if ("key" in op) out.push(await this.#get(op));
      else out.push(await this.#listNamespaces(op));
    }
    return out;
  }

  async #get({ namespace, key }) {
    const f = await this.#find(namespace, key);
    return f ? this.#item(f) : null;
  }

  async #put({ namespace, key, value }) {
    const f = await this.#find(namespace, key);
    if (value === null) {
      if (f) await this.#client.deleteFile(f.id);
      return undefined;
    }
    const content = JSON.stringify(value);
    if (f) {
      if (f.content !== content) await this.#client.updateFile(f.id, { content, expected_content_sha256: f.content_sha256 });
    } else {
      const { scope } = this.#split(namespace);
      await this.#client.createFile(this.#path(namespace, key), content, { scope });
    }
    return undefined;
  }

  // Every file of ours the principal can read (records of category file).
  async #all(scope) {
    const out = [];
    for await (const r of this.#client.records({ type: "resource", category: "file", status: "active", scope, limit: 200 })) {
      const it = this.#item({ ...r, path: r.metadata?.file_path });
      if (it) out.push(it);
    }
    return out;
  }

  async #search({ namespacePrefix, filter, limit = 10, offset = 0, query }) {
    const scope = namespacePrefix.length ? this.#split(namespacePrefix).scope : {};
    const under = (it) => namespacePrefix.every((s, i) => it.namespace[i] === s);
    const matches = (it) => !filter || Object.entries(filter).every(([k, v]) => JSON.stringify(it.value?.[k]) === JSON.stringify(v));
    if (query) {
      const res = await this.#client.search(query, { k: Math.min(100, (offset + limit) * 3), category: "file", types: ["resource"], scope });
      const items = [];
      for (const h of res.results) {
        const it = this.#item({ ...h.record, path: h.record.metadata?.file_path });
        if (it && under(it) && matches(it)) items.push({ ...it, score: h.relevance });
      }
      return items.slice(offset, offset + limit);
    }
    const items = (await this.#all(scope)).filter((it) => under(it) && matches(it));
    items.sort((a, b) => b.updatedAt - a.updatedAt);
    return items.slice(offset, offset + limit);
  }

  async #listNamespaces({ matchConditions = [], maxDepth, limit = 100, offset = 0 }) {
    const seen = new Map();
    for (const it of await this.#all(undefined)) {
      const ns = maxDepth ? it.namespace.slice(0, maxDepth) : it.namespace;
      const ok = matchConditions.every(({ matchType, path }) => {
        const part = matchType === "prefix" ? ns.slice(0, path.length) : ns.slice(ns.length - path.length);
        return part.length === path.length && path.every((p, i) => p === "*" || p === part[i]);
      });
      if (ok) seen.set(JSON.stringify(ns), ns);
    }
    return [...seen.values()].sort((a, b) => a.join("\u0000").localeCompare(b.join("\u0000"))).slice(offset, offset + limit);
  }
}
