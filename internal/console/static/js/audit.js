// audit.js: the audit chain, filtered by actor and action, and "verify
// now", which names the first broken entry.
import { get, qs } from "./api.js";
import { h, clear, load, empty, when, field } from "./ui.js";

export default function audit(main) {
  const actor = h("input", { id: "a-actor", placeholder: "actor id or kind", size: 18 });
  const action = h("input", { id: "a-action", placeholder: "e.g. approval.", size: 18 });
  const verifyOut = h("div", { id: "verify-out", "aria-live": "polite" });
  const verify = h("button", { type: "button", class: "primary", id: "verify" }, "Verify now");
  const list = h("div", { id: "a-list" });
  const more = h("button", { type: "button", hidden: true }, "Load more entries");
  let entries = [], after = 0, total = 0;
  verify.addEventListener("click", () => load(verifyOut, "verification", async () => {
    const r = await get("/v1/audit/verify");
    clear(verifyOut, r.ok
      ? h("p", { class: "state ok", id: "verify-result" }, "Chain intact: " + r.entries + " entries verified, head " + (r.head || "").slice(0, 16) + "…")
      : h("p", { class: "state error", id: "verify-result", role: "alert" }, "Chain BROKEN at entry #" + r.broken.seq + " (" + r.broken.id + "): " + r.broken.reason));
  }));
  // The API pages oldest first from a sequence number; the page reads
  // forward and filters what it has read.
  const page = async () => {
    const r = await get("/v1/audit" + qs({ after, limit: 500 }));
    entries = entries.concat(r.entries);
    after = r.next_after || 0;
    more.hidden = !after;
    total = entries.length;
    render();
  };
  const render = () => {
    const a = actor.value.trim(), ev = action.value.trim();
    const vs = entries.filter((e) => (!a || e.actor_id.includes(a) || e.actor_kind === a) && (!ev || e.event.includes(ev))).reverse();
    if (!vs.length) { clear(list, empty(total ? "No entry matches the filter." : "The audit log is empty.")); return; }
    clear(list, h("p", { class: "meta" }, vs.length + " of " + total + " entries loaded, newest first"), h("div", { class: "scroll" }, h("table", {},
      h("thead", {}, h("tr", {}, ["#", "Time", "Actor", "Action", "Details"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, vs.slice(0, 300).map((e) => h("tr", {}, h("td", {}, e.seq), h("td", {}, when(e.ts)), h("td", { class: "wrap" }, e.actor_kind + " " + e.actor_id),
        h("td", { class: "event" }, e.event), h("td", { class: "wrap" }, JSON.stringify(e.payload))))))));
  };
  actor.addEventListener("input", render); action.addEventListener("input", render);
  more.addEventListener("click", () => page());
  clear(main, h("h1", {}, "Audit"), h("div", { class: "bar" }, verify), verifyOut,
    h("div", { class: "bar" }, field("Actor", actor), field("Action", action)), list, more);
  load(list, "audit log", page);
}
