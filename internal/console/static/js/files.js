// files.js: memory files (MEMORY.md-style): list, view, edit, history.
import { get, post, patch, qs } from "./api.js";
import { h, clear, load, empty, toast, when, field, diff } from "./ui.js";

export default function files(main, args) {
  if (args[0]) return file(main, args[0]);
  const prefix = h("input", { id: "f-prefix", placeholder: "/memories/", size: 24 });
  const list = h("div", { id: "f-list" });
  const path = h("input", { id: "f-newpath", placeholder: "/memories/notes.md", size: 24, required: true });
  const content = h("textarea", { id: "f-newcontent", "aria-label": "New file content" });
  const newForm = h("form", { class: "card" }, h("h2", {}, "New file"), field("Path", path), field("Content", content),
    h("button", { type: "submit", class: "primary" }, "Create"));
  newForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try { const res = await post("/v1/files", { path: path.value, content: content.value }); toast("Created " + path.value + " (" + res.decision + ")"); show(); } catch (e) { toast(e.message); }
  });
  const show = () => load(list, "files", async () => {
    const res = await get("/v1/files" + qs({ path_prefix: prefix.value }));
    if (!res.files.length) { clear(list, empty("No memory files yet.")); return; }
    clear(list, h("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": "Memory files" }, h("table", {}, h("thead", {}, h("tr", {}, ["Path", "Version", "Size", "Pinned", "Status"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, res.files.map((f) => h("tr", {}, h("td", { class: "wrap" }, h("a", { href: "#/files/" + encodeURIComponent(f.id) }, f.path)),
        h("td", {}, f.version), h("td", {}, f.size_bytes + " B"), h("td", {}, f.pinned ? "yes" : ""), h("td", {}, f.status)))))));
  });
  const filter = h("form", { class: "bar" }, field("Path prefix", prefix), h("button", { type: "submit" }, "List"));
  filter.addEventListener("submit", (ev) => { ev.preventDefault(); show(); });
  clear(main, h("h1", {}, "Memory files"), filter, list, newForm);
  show();
}

function file(main, id) {
  const view = h("div", {}), hist = h("div", {});
  clear(main, h("p", {}, h("a", { href: "#/files" }, "← Files")), view, h("h2", {}, "History"), hist);
  const show = () => load(view, "file", async () => {
    const { file: f } = await get("/v1/files/" + encodeURIComponent(id));
    const text = h("textarea", { id: "f-content", "aria-label": "Content of " + f.path, rows: 14 });
    text.value = f.content;
    const save = h("button", { type: "button", class: "primary" }, "Save new version");
    save.addEventListener("click", async () => {
      try { await patch("/v1/files/" + encodeURIComponent(id), { content: text.value, expected_content_sha256: f.content_sha256 }); toast("Saved"); show(); history(); } catch (e) { toast(e.message); }
    });
    clear(view, h("h1", {}, f.path), h("p", { class: "meta" }, "version " + f.version + ", " + f.size_bytes + " bytes, " + f.status + (f.pinned ? ", pinned" : "")), text, h("div", { class: "bar" }, save));
  });
  const history = () => load(hist, "history", async () => {
    const res = await get("/v1/files/" + encodeURIComponent(id) + "/history");
    const vs = (res.versions || []).sort((a, b) => a.version - b.version);
    if (!vs.length) { clear(hist, empty("No versions.")); return; }
    clear(hist, vs.map((v, i) => h("div", { class: "card" }, h("div", { class: "meta" }, "v" + v.version + (v.redacted ? " (redacted)" : "") + (v.deleted ? " (deleted)" : "")),
      h("div", { class: "content" }, i ? diff(vs[i - 1].content, v.content) : v.content))));
  });
  show(); history();
}
