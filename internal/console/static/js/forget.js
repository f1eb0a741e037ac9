// forget.js: forget a subject. Preview first (counts by kind; nothing is
// erased), then confirm, then the erasure receipt.
import { post } from "./api.js";
import { h, clear, load, empty, field, confirmDialog } from "./ui.js";

const counts = (r) => h("table", { class: "counts" }, h("tbody", {}, ["records", "messages", "nodes", "edges"].map((k) =>
  h("tr", {}, h("th", { scope: "row" }, k), h("td", { "data-kind": k }, r[k])))));

export default function forget(main) {
  const subject = h("input", { id: "subject", placeholder: "user:alice", required: true, size: 24 });
  const out = h("div", { id: "forget-out", "aria-live": "polite" }, empty("Name a subject (label:key) to see what forgetting it would erase."));
  const form = h("form", { class: "bar" }, field("Subject", subject), h("button", { type: "submit", class: "primary" }, "Preview"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const s = subject.value.trim();
    load(out, "preview", async () => {
      const p = await post("/v1/graph/forget_subject", { subject: s, preview: true });
      const total = p.records + p.messages + p.nodes + p.edges;
      const go = h("button", { type: "button", class: "danger", id: "forget-confirm", disabled: total === 0 }, "Forget " + s);
      go.addEventListener("click", async () => {
        if (!await confirmDialog("Forget " + s + " for good?", "This erases " + p.records + " records, " + p.messages + " messages, " + p.nodes + " nodes and " + p.edges + " edges. It cannot be undone.", "Forget")) return;
        load(out, "erasure", async () => {
          const r = await post("/v1/graph/forget_subject", { subject: s });
          clear(out, h("div", { class: "card", id: "receipt" }, h("h2", {}, "Erasure receipt"),
            h("p", {}, "Subject " + r.subject + " forgotten at " + new Date().toLocaleString() + ". The audit log records the counts and a hash of the subject, never its name."), counts(r)));
        });
      });
      clear(out, h("div", { class: "card", id: "preview" }, h("h2", {}, "Would erase (preview, nothing erased yet)"), counts(p),
        total === 0 ? h("p", {}, "Nothing in memory concerns " + s + ".") : null, go));
    });
  });
  clear(main, h("h1", {}, "Forget a subject"), form, out);
  subject.focus();
}
