// queue.js: the review queue. Pending, quarantined and conflict items,
// each with what it would change (a diff), the PII the screen finds, the
// writer and its trust; approve (optionally edited, with an access
// level), reject with a reason; keyboard shortcuts and bulk actions.
import { get, post, qs } from "./api.js";
import { h, clear, load, empty, failed, toast, when, field, diff, highlight } from "./ui.js";

const ACCESS = ["", "public", "agent", "user", "system", "sensitive"];

export default function queue(main) {
  let status = "pending", kind = "", items = [], cursor = "", sel = 0, trust = new Map();
  const list = h("div", { id: "queue-list", "aria-live": "polite" });
  const more = h("button", { type: "button", id: "queue-more", hidden: true }, "Load more");
  const timing = h("span", { class: "meta", id: "queue-timing" });
  const statusSel = h("select", { id: "q-status" }, ["pending", "approved", "rejected", "expired"].map((s) => h("option", { value: s }, s)));
  const kindSel = h("select", { id: "q-kind" }, h("option", { value: "" }, "all kinds"),
    ["pending_write", "quarantine", "conflict"].map((k) => h("option", { value: k }, k)));
  const bulkReason = h("input", { id: "bulk-reason", maxlength: 256, placeholder: "reason (optional)" });
  const bulk = h("div", { class: "bar", role: "group", "aria-label": "Bulk actions" },
    h("button", { type: "button", onclick: () => checkAll(true) }, "Select all"),
    h("button", { type: "button", onclick: () => checkAll(false) }, "Select none"),
    h("button", { type: "button", class: "primary", id: "bulk-approve", onclick: () => bulkDo("approve") }, "Approve selected"),
    field("Reject reason", bulkReason),
    h("button", { type: "button", class: "danger", id: "bulk-reject", onclick: () => bulkDo("reject") }, "Reject selected"));
  clear(main, h("h1", {}, "Review queue"),
    h("div", { class: "bar" }, field("Status", statusSel), field("Kind", kindSel), timing),
    h("p", { class: "meta" }, "Keys: ", h("span", { class: "kbd" }, "j"), "/", h("span", { class: "kbd" }, "k"), " move, ",
      h("span", { class: "kbd" }, "x"), " select, ", h("span", { class: "kbd" }, "a"), " approve, ",
      h("span", { class: "kbd" }, "e"), " edit, ", h("span", { class: "kbd" }, "r"), " reject"),
    bulk, list, more);

  statusSel.addEventListener("change", () => { status = statusSel.value; bulk.hidden = status !== "pending"; reload(); });
  kindSel.addEventListener("change", () => { kind = kindSel.value; render(); });
  more.addEventListener("click", () => page(false));

  let generation = 0; // only the latest reload renders (a quick change of filter starts another)
  async function page(first, gen) {
    const t0 = performance.now();
    const res = await get("/v1/approvals" + qs({ status, cursor: first ? "" : cursor, limit: 50 }));
    if (gen !== undefined && gen !== generation) return;
    items = first ? res.items : items.concat(res.items);
    cursor = res.next_cursor || "";
    more.hidden = !cursor;
    render();
    if (first) {
      const ms = Math.round(performance.now() - t0);
      timing.textContent = "first page in " + ms + " ms";
      timing.dataset.ms = String(ms);
      // Since the page started loading: what a reload of the queue costs.
      timing.dataset.sinceLoad = String(Math.round(performance.now()));
    }
  }
  function reload() {
    sel = 0;
    const gen = ++generation;
    load(list, "queue", async () => {
      try { const a = await get("/v1/agents"); trust = new Map(a.agents.map((x) => [x.id, x])); } catch { trust = new Map(); }
      await page(true, gen);
    });
  }
  function visible() { return items.filter((it) => !kind || it.kind === kind); }
  function render() {
    const vs = visible();
    if (!vs.length) { clear(list, empty(status === "pending" ? "Nothing waits for review." : "No " + status + " items.")); return; }
    if (sel >= vs.length) sel = vs.length - 1;
    clear(list, vs.map((it, i) => card(it, i)));
  }
  function card(it, i) {
    const r = it.record, writer = trust.get(r.source.principal_id);
    const box = h("input", { type: "checkbox", class: "pick", "aria-label": "Select item " + (i + 1), "data-id": it.id });
    const kids = [
      h("div", { class: "meta" }, status === "pending" ? box : null,
        h("span", { class: "badge " + (it.kind === "quarantine" ? "bad" : it.kind === "conflict" ? "warn" : "") }, it.kind),
        h("span", {}, "reason: " + it.reason),
        h("span", {}, "writer: " + (r.source.agent || r.source.principal_id || "—") + (writer ? " (trust " + (writer.trust || "standard") + ")" : "")),
        h("span", {}, "queued " + when(it.created_at)),
        (it.pii || []).length ? h("span", {}, "PII: ", [...new Set(it.pii.map((p) => p.kind))].map((k) => h("span", { class: "badge bad" }, k + " "))) : null),
    ];
    if (it.conflicts_with) {
      kids.push(h("div", { class: "cols" },
        h("div", {}, h("h2", {}, "Current record"), h("div", { class: "content" }, it.conflicts_with.content)),
        h("div", {}, h("h2", {}, "Proposed (changes marked)"), h("div", { class: "content diff" }, diff(it.conflicts_with.content, r.content)))));
    } else if (r.supersedes && status === "pending") {
      const d = h("div", { class: "content" }, "Loading the record it supersedes…");
      get("/v1/records/" + encodeURIComponent(r.supersedes) + "?include_sensitive=true")
        .then((o) => clear(d, diff(o.content, r.content))).catch(() => clear(d, highlight(r.content, it.pii)));
      kids.push(h("h2", {}, "Proposed (against the record it supersedes)"), d);
    } else {
      kids.push(h("div", { class: "content proposed" }, highlight(r.content || "(content erased)", it.pii)));
    }
    if (status === "pending") kids.push(actions(it));
    else kids.push(h("p", { class: "meta decided" }, it.status + " by " + (it.decided_by || "—") + " at " + when(it.decided_at),
      it.decision_reason ? h("span", { class: "reject-reason" }, "reason: " + it.decision_reason) : null));
    const c = h("article", { class: "card" + (i === sel ? " selected" : ""), "data-approval": it.id, tabindex: "-1", "aria-label": it.kind + " item " + (i + 1) }, kids);
    c.addEventListener("click", () => { sel = i; mark(); });
    return c;
  }
  function actions(it) {
    const edit = h("textarea", { class: "edit", "aria-label": "Edited content" });
    edit.value = it.record.content;
    const access = h("select", { class: "access", "aria-label": "Access level" }, ACCESS.map((a) => h("option", { value: a }, a || "(keep)")));
    const editor = h("div", { class: "editor", hidden: true }, field("Edit before approving", edit));
    const reason = h("input", { class: "reason", maxlength: 256, "aria-label": "Reject reason", placeholder: "reason" });
    const err = h("p", { class: "err", role: "alert" });
    const approve = async () => {
      const body = {};
      if (!editor.hidden && edit.value !== it.record.content) body.content = edit.value;
      if (access.value) body.access = access.value;
      await act(it, "approve", body, err);
    };
    return h("div", {}, editor, h("div", { class: "bar" },
      h("button", { type: "button", class: "primary", "data-act": "approve", onclick: approve }, "Approve"),
      h("button", { type: "button", "data-act": "edit", onclick: () => { editor.hidden = !editor.hidden; if (!editor.hidden) edit.focus(); } }, "Edit"),
      field("Access", access), reason,
      h("button", { type: "button", class: "danger", "data-act": "reject", onclick: () => act(it, "reject", { reason: reason.value }, err) }, "Reject")), err);
  }
  async function act(it, what, body, err) {
    try {
      await post("/v1/approvals/" + encodeURIComponent(it.id) + "/" + what, body);
      items = items.filter((x) => x.id !== it.id);
      render(); mark();
      toast((what === "approve" ? "Approved" : "Rejected") + " " + it.kind + " item" + (body.reason ? " — reason: " + body.reason : ""));
    } catch (e) { if (err) err.textContent = e.message; else throw e; }
  }
  async function bulkDo(what) {
    const ids = [...list.querySelectorAll("input.pick:checked")].map((b) => b.dataset.id);
    if (!ids.length) { toast("Select items first (x or the checkboxes)."); return; }
    let ok = 0;
    for (const id of ids) {
      const it = items.find((x) => x.id === id);
      try { await act(it, what, what === "reject" ? { reason: bulkReason.value } : {}); ok++; } catch (e) { toast(e.message); }
    }
    toast((what === "approve" ? "Approved " : "Rejected ") + ok + " of " + ids.length);
  }
  function checkAll(v) { list.querySelectorAll("input.pick").forEach((b) => { b.checked = v; }); }
  function mark() {
    const cards = list.querySelectorAll("article.card");
    cards.forEach((c, i) => c.classList.toggle("selected", i === sel));
    if (cards[sel]) cards[sel].scrollIntoView({ block: "nearest" });
    return cards[sel];
  }
  function onKey(ev) {
    if (ev.altKey || ev.ctrlKey || ev.metaKey || /INPUT|TEXTAREA|SELECT/.test(document.activeElement.tagName)) return;
    const n = visible().length;
    const c = list.querySelectorAll("article.card")[sel];
    switch (ev.key) {
      case "j": sel = Math.min(n - 1, sel + 1); mark().focus(); break;
      case "k": sel = Math.max(0, sel - 1); mark().focus(); break;
      case "x": if (c) { const b = c.querySelector("input.pick"); if (b) b.checked = !b.checked; } break;
      case "a": if (c) c.querySelector('[data-act="approve"]').click(); break;
      case "e": if (c) c.querySelector('[data-act="edit"]').click(); break;
      case "r": if (c) { ev.preventDefault(); c.querySelector("input.reason").focus(); } break;
      default: return;
    }
  }
  document.addEventListener("keydown", onKey);
  reload();
  return () => document.removeEventListener("keydown", onKey);
}
