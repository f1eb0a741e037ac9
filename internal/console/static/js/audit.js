// audit.js: the audit chain, filtered by actor and action on the
// server, and "verify now", which names the first broken entry.
import { get, qs } from "./api.js";
import { h, clear, load, empty, when, field } from "./ui.js";

export default function audit(main) {
  const actor = h("input", { id: "a-actor", placeholder: "actor id, or operator, agent…", size: 18 });
  const action = h("input", { id: "a-action", placeholder: "approval.reject or approval.", size: 18 });
  const verifyOut = h("div", { id: "verify-out", "aria-live": "polite" });
  const verify = h("button", { type: "button", class: "primary", id: "verify" }, "Verify now");
  const list = h("div", { id: "a-list" });
  const more = h("button", { type: "button", hidden: true }, "Load more entries");
  let entries = [], after = 0, gen = 0, timer = 0;
  verify.addEventListener("click", () => load(verifyOut, "verification", async () => {
    const r = await get("/v1/audit/verify");
    clear(verifyOut, r.ok
      ? h("p", { class: "state ok", id: "verify-result" }, "Chain intact: " + r.entries + " entries verified, head " + (r.head || "").slice(0, 16) + "…")
      : h("p", { class: "state error", id: "verify-result", role: "alert" }, "Chain BROKEN at entry #" + r.broken.seq + " (" + r.broken.id + "): " + r.broken.reason));
  }));
  // The API pages oldest first from a sequence number and filters by
  // actor (id or kind) and action (name, or a prefix ending in ".") in
  // the database; a newer filter drops the answers of older ones.
  const page = async () => {
    const mine = gen;
    const r = await get("/v1/audit" + qs({ after, limit: 500, actor: actor.value.trim(), action: action.value.trim() }));
    if (mine !== gen) return;
    entries = entries.concat(r.entries);
    after = r.next_after || 0;
    more.hidden = !after;
    render();
  };
  const render = () => {
    const filtered = actor.value.trim() || action.value.trim();
    const vs = entries.slice().reverse();
    if (!vs.length) { clear(list, empty(filtered ? "No entry matches the filter." : "The audit log is empty.")); return; }
    clear(list, h("p", { class: "meta" }, vs.length + (filtered ? " matching" : "") + " entries loaded" + (after ? " (more to load)" : "") + ", newest first"), h("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": "Audit entries" }, h("table", {},
      h("thead", {}, h("tr", {}, ["#", "Time", "Actor", "Action", "Details"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, vs.slice(0, 300).map((e) => h("tr", {}, h("td", {}, e.seq), h("td", {}, when(e.ts)), h("td", { class: "wrap" }, e.actor_kind + " " + e.actor_id),
        h("td", { class: "event" }, e.event), h("td", { class: "wrap" }, JSON.stringify(e.payload))))))));
  };
  const refilter = () => {
    clearTimeout(timer);
    timer = setTimeout(() => { gen++; entries = []; after = 0; load(list, "audit log", page); }, 250);
  };
  actor.addEventListener("input", refilter); action.addEventListener("input", refilter);
  more.addEventListener("click", () => page());
  clear(main, h("h1", {}, "Audit"), h("div", { class: "bar" }, verify), verifyOut,
    h("div", { class: "bar" }, field("Actor", actor), field("Action", action)), list, more);
  load(list, "audit log", page);
}
