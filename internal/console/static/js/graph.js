// graph.js: an entity's neighbourhood, two hops, typed relations, drawn
// as a radial layout (the entity in the middle, hop 1 and hop 2 on
// rings) with the same facts as a list for screen readers.
import { get, qs } from "./api.js";
import { h, clear, load, empty, field } from "./ui.js";

const S = { svg: true };
const name = (n) => n.label + ":" + n.natural_key;

export default function graph(main, args) {
  const ref = h("input", { id: "g-ref", placeholder: "person:alice", size: 24, required: true });
  const out = h("div", { id: "g-out" }, empty("Enter an entity (label:key) to see its neighbourhood."));
  const form = h("form", { class: "bar", role: "search" }, field("Entity", ref), h("button", { type: "submit", class: "primary" }, "Show"));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); location.hash = "#/graph/" + encodeURIComponent(ref.value); });
  clear(main, h("h1", {}, "Graph"), form, out);
  if (args[0]) { ref.value = args[0]; draw(out, args[0]); } else ref.focus();
}

function draw(out, ref) {
  load(out, "neighbourhood", async () => {
    const center = await get("/v1/graph/nodes/" + encodeURIComponent(ref));
    const res = await get("/v1/graph/nodes/" + encodeURIComponent(ref) + "/neighbors" + qs({ depth: 2, limit: 100 }));
    const ns = res.neighbors || [];
    if (!ns.length) { clear(out, h("p", {}, name(center)), empty("No neighbours within two hops.")); return; }
    const W = 720, H = 520, cx = W / 2, cy = H / 2;
    const pos = new Map([[center.id, { x: cx, y: cy }]]);
    const hop1 = ns.filter((n) => n.depth === 1), hop2 = ns.filter((n) => n.depth !== 1);
    hop1.forEach((n, i) => { const a = (2 * Math.PI * i) / hop1.length; pos.set(n.node.id, { x: cx + 140 * Math.cos(a), y: cy + 140 * Math.sin(a), a }); });
    hop2.forEach((n, i) => {
      const p = pos.get(n.from);
      const a = (p && p.a !== undefined ? p.a : 0) + ((i % 5) - 2) * 0.18;
      pos.set(n.node.id, { x: cx + 235 * Math.cos(a), y: cy + 235 * Math.sin(a) });
    });
    const lines = [], labels = [], dots = [];
    for (const n of ns) {
      const a = pos.get(n.from), b = pos.get(n.node.id);
      if (!a || !b) continue;
      lines.push(h("line", { ...S, x1: a.x, y1: a.y, x2: b.x, y2: b.y }));
      labels.push(h("text", { ...S, x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 - 3, "text-anchor": "middle", class: "rel" }, n.relation));
    }
    for (const [id, p] of pos) {
      const n = id === center.id ? { node: center, depth: 0 } : ns.find((x) => x.node.id === id);
      const a = h("a", { ...S, href: "#/graph/" + encodeURIComponent(name(n.node)) },
        h("circle", { ...S, cx: p.x, cy: p.y, r: n.depth === 0 ? 9 : 6, class: n.depth === 0 ? "center" : "d" + n.depth }),
        h("text", { ...S, x: p.x, y: p.y + 18, "text-anchor": "middle" }, name(n.node)));
      dots.push(a);
    }
    const svg = h("svg", { ...S, class: "graph", viewBox: "0 0 " + W + " " + H, role: "group", "aria-label": "Neighbourhood of " + name(center) }, lines, labels, dots);
    const list = h("ul", { class: "relations" }, ns.map((n) => h("li", {}, "hop " + n.depth + ": ",
      (n.forward ? "→ " : "← ") + n.relation + " ", h("a", { href: "#/graph/" + encodeURIComponent(name(n.node)) }, name(n.node)))));
    clear(out, h("p", {}, "Neighbourhood of ", h("strong", {}, name(center)), " (" + ns.length + " nodes within two hops)"), svg, h("h2", {}, "Relations"), list);
  });
}
