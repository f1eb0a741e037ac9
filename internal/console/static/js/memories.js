// memories.js: search with the /v1/search filters and explain, and a
// record's page: versions with diffs, the "known at" picker, its graph
// neighbourhood, forget with confirmation.
import { get, post, del, qs } from "./api.js";
import { h, clear, load, empty, toast, when, field, diff, confirmDialog } from "./ui.js";

const TYPES = ["belief", "decision", "episode", "skill", "entity", "preference", "reflection", "resource"];
const STATUSES = ["active", "provisional", "quarantined", "archived", "superseded"];

const iso = (v) => (v ? new Date(v).toISOString() : undefined);

export default function memories(main, args) {
  if (args[0] === "record" && args[1]) return record(main, args[1]);
  const q = h("input", { id: "m-query", type: "search", required: true, size: 30 });
  const type = h("select", { id: "m-type" }, h("option", { value: "" }, "any"), TYPES.map((t) => h("option", {}, t)));
  const status = h("select", { id: "m-status" }, h("option", { value: "" }, "default"), STATUSES.map((t) => h("option", {}, t)));
  const entity = h("input", { id: "m-entity", placeholder: "label:key", size: 14 });
  const category = h("input", { id: "m-category", size: 10 });
  const asOf = h("input", { id: "m-asof", type: "datetime-local" });
  const knownAt = h("input", { id: "m-knownat", type: "datetime-local" });
  const k = h("input", { id: "m-k", type: "number", min: 1, max: 100, value: 10, size: 4 });
  const sens = h("input", { id: "m-sensitive", type: "checkbox" });
  const inval = h("input", { id: "m-invalidated", type: "checkbox" });
  const out = h("div", { id: "m-results" }, empty("Search your workspace's memories."));
  const form = h("form", { class: "bar", role: "search" },
    field("Query", q), field("Type", type), field("Status", status), field("Entity", entity), field("Category", category),
    field("As of (valid time)", asOf), field("Known at (transaction time)", knownAt), field("Results", k),
    h("label", {}, h("span", {}, "Sensitive"), sens), h("label", {}, h("span", {}, "Invalidated"), inval),
    h("button", { type: "submit", class: "primary" }, "Search"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const body = { query: q.value, k: Number(k.value) || 10, explain: true, scope: {},
      types: type.value ? [type.value] : undefined, statuses: status.value ? [status.value] : undefined,
      entity: entity.value || undefined, category: category.value || undefined,
      as_of: iso(asOf.value), known_at: iso(knownAt.value),
      include_sensitive: sens.checked || undefined, include_invalidated: inval.checked || undefined };
    load(out, "results", async () => {
      const res = await post("/v1/search", body);
      if (!res.results.length) { clear(out, empty("No memory matches.")); return; }
      clear(out, h("p", { class: "meta" }, "route " + res.route + "; signals " + (res.signals || []).join(", ") + (res.degraded ? "; degraded: " + res.degraded.join(", ") : "")),
        res.results.map((hit) => h("article", { class: "card hit" },
          h("div", { class: "meta" }, h("a", { href: "#/memories/record/" + encodeURIComponent(hit.record.id) }, hit.record.id),
            h("span", { class: "badge" }, hit.record.type), h("span", {}, hit.record.status),
            h("span", {}, "relevance " + hit.relevance.toFixed(2)),
            h("span", { class: "explain" }, "found by: " + Object.entries(hit.explain || {}).map(([s, v]) => s + " #" + v.rank).join(", "))),
          h("div", { class: "content" }, hit.record.content))));
    });
  });
  clear(main, h("h1", {}, "Memories"), form, out);
  q.focus();
}

function record(main, id) {
  const head = h("div", {}, ), hist = h("div", { id: "history" }), nbr = h("div", { id: "neighbourhood" });
  const knownAt = h("input", { id: "r-knownat", type: "datetime-local" });
  const show = h("button", { type: "button" }, "Show as known then");
  const forgetBtn = h("button", { type: "button", class: "danger", id: "forget-record" }, "Forget this record");
  clear(main, h("p", {}, h("a", { href: "#/memories" }, "← Search")), h("h1", {}, "Record ", h("code", {}, id)),
    head, h("div", { class: "bar" }, field("Known at", knownAt), show, forgetBtn),
    h("h2", {}, "Versions"), hist, h("h2", {}, "Graph neighbourhood"), nbr);
  const showHead = (at) => load(head, "record", async () => {
    const r = await get("/v1/records/" + encodeURIComponent(id) + qs({ include_sensitive: "true", known_at: at }));
    clear(head, h("article", { class: "card", id: "record-head" },
      h("div", { class: "meta" }, h("span", { class: "badge" }, r.type), h("span", {}, "status " + r.status), h("span", {}, "version " + r.version),
        h("span", {}, "access " + r.access), h("span", {}, "by " + (r.source.agent || r.modified_by || "—")), h("span", {}, "updated " + when(r.updated_at)),
        at ? h("span", { class: "badge warn" }, "as known at " + when(at)) : null),
      h("div", { class: "content" }, r.content || "(erased)"),
      h("div", { class: "meta" }, "entities: ", (r.entities || []).map((e) => h("a", { href: "#/graph/" + encodeURIComponent(e) }, e + " ")))));
    graphOf(nbr, r.entities || []);
  });
  show.addEventListener("click", () => showHead(iso(knownAt.value)));
  forgetBtn.addEventListener("click", async () => {
    if (!await confirmDialog("Forget this record?", "Its content and every version are erased for good; a tombstone stays.", "Forget")) return;
    try { await del("/v1/records/" + encodeURIComponent(id)); toast("Record forgotten"); showHead(); history(); } catch (e) { toast(e.message); }
  });
  const history = () => load(hist, "versions", async () => {
    const res = await get("/v1/records/" + encodeURIComponent(id) + "/history?include_sensitive=true");
    const vs = res.versions || [];
    if (!vs.length) { clear(hist, empty("No versions.")); return; }
    vs.sort((a, b) => a.version - b.version);
    clear(hist, h("ol", { class: "versions" }, vs.map((v, i) => h("li", { class: "card version", "data-version": v.version },
      h("div", { class: "meta" }, h("strong", {}, "v" + v.version), h("span", {}, v.status), h("span", {}, when(v.updated_at)), h("span", {}, "by " + (v.modified_by || "—"))),
      h("div", { class: "content" }, i === 0 ? v.content : diff(vs[i - 1].content, v.content))))));
  });
  showHead(); history();
}

// graphOf lists the one-hop neighbours of each entity a record names.
async function graphOf(el, entities) {
  if (!entities.length) { clear(el, empty("This record names no entity.")); return; }
  load(el, "neighbourhood", async () => {
    const parts = [];
    for (const e of entities.slice(0, 5)) {
      try {
        const res = await get("/v1/graph/nodes/" + encodeURIComponent(e) + "/neighbors?depth=1&limit=20");
        parts.push(h("div", { class: "card" }, h("a", { href: "#/graph/" + encodeURIComponent(e) }, e),
          res.neighbors.length ? h("ul", {}, res.neighbors.map((n) => h("li", {}, n.relation + " → " + n.node.label + ":" + n.node.natural_key))) : h("p", { class: "meta" }, "no neighbours")));
      } catch (err) { parts.push(h("p", { class: "meta" }, e + ": " + err.message)); }
    }
    clear(el, parts);
  });
}
