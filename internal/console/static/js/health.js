// health.js: /readyz, index sizes and the embedding backlog, durable
// jobs, and the Prometheus metrics that matter as small charts, sampled
// while the screen is open.
import { get, qs } from "./api.js";
import { h, clear, load, empty, failed, when, field } from "./ui.js";

const S = { svg: true };
// The series the charts plot: a name and how to read it from the
// metrics text (sum of every sample of a metric, or a filtered subset).
const SERIES = [
  ["HTTP requests", (m) => sum(m, "memgate_http_requests_total")],
  ["HTTP 5xx", (m) => sum(m, "memgate_http_requests_total", /code="5/)],
  ["Gate decisions", (m) => sum(m, "memgate_gate_decisions_total")],
  ["Quarantined", (m) => sum(m, "memgate_gate_decisions_total", /decision="quarantined"/)],
  ["Job attempts", (m) => sum(m, "memgate_job_attempts_total")],
  ["Failed jobs", (m) => sum(m, "memgate_job_attempts_total", /outcome="failed"/)],
];

function sum(text, name, filter) {
  let t = 0, seen = false;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name + "{") && !line.startsWith(name + " ")) continue;
    if (filter && !filter.test(line)) continue;
    const v = Number(line.slice(line.lastIndexOf(" ") + 1));
    if (!Number.isNaN(v)) { t += v; seen = true; }
  }
  return seen ? t : null;
}

function chart(samples) {
  const values = samples.length === 1 ? [samples[0], samples[0]] : samples;
  const W = 200, H = 60, n = values.length;
  const max = Math.max(1, ...values), min = Math.min(...values);
  const pts = values.map((v, i) => (n === 1 ? W : (i * W) / (n - 1)).toFixed(1) + "," + (H - 4 - ((v - min) / Math.max(1, max - min)) * (H - 8)).toFixed(1)).join(" ");
  return h("svg", { ...S, class: "chart", viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "trend of the last " + samples.length + " samples" }, h("polyline", { ...S, points: pts }));
}

export default function health(main) {
  const ready = h("div", { id: "readyz" }), index = h("div", { id: "index" }), charts = h("div", { class: "grid", id: "charts" });
  const history = SERIES.map(() => []);
  const jobs = h("div", { id: "jobs" });
  const state = h("select", { id: "j-state" }, ["", "queued", "running", "done", "dead"].map((v) => h("option", { value: v }, v || "every state")));
  const moreJobs = h("button", { type: "button", id: "jobs-more", hidden: true }, "More jobs");
  let jobRows = [], jobCursor = "";
  const showJobs = async () => {
    const r = await get("/v1/jobs" + qs({ state: state.value, cursor: jobCursor, limit: 20 }));
    jobRows = jobRows.concat(r.jobs);
    jobCursor = r.next_cursor || "";
    moreJobs.hidden = !jobCursor;
    if (!jobRows.length) { clear(jobs, empty(state.value ? "No " + state.value + " jobs." : "No durable jobs yet.")); return; }
    clear(jobs, h("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": "Jobs" }, h("table", {}, h("thead", {}, h("tr", {}, ["Kind", "State", "Attempts", "Updated", "Last error"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, jobRows.map((j) => h("tr", { "data-job": j.id }, h("td", {}, j.kind), h("td", { class: "job-state" }, j.status), h("td", {}, String(j.attempts)),
        h("td", {}, when(j.updated_at)), h("td", { class: "wrap" }, j.last_error || "")))))));
  };
  const reloadJobs = () => { jobRows = []; jobCursor = ""; load(jobs, "jobs", showJobs); };
  state.addEventListener("change", reloadJobs);
  moreJobs.addEventListener("click", () => load(jobs, "jobs", showJobs));
  clear(main, h("h1", {}, "Health"), h("h2", {}, "Readiness"), ready, h("h2", {}, "Search index"), index,
    h("h2", {}, "Jobs"), h("div", { class: "bar" }, field("State", state)), jobs, moreJobs,
    h("h2", {}, "Metrics (sampled every 5 s while this screen is open)"), charts);
  reloadJobs();
  const tick = async () => {
    try {
      const res = await fetch("/readyz", { cache: "no-store" });
      const r = await res.json();
      clear(ready, h("div", { class: "card" }, h("p", {}, h("span", { class: "badge " + (res.ok ? "ok" : "bad") }, r.status)),
        h("p", { class: "meta" }, "database " + r.database + ", writes " + r.writes + ", audit chains " + (r.audit && r.audit.ok ? "verified" : "NOT verified"))));
    } catch (e) { clear(ready, failed(e)); }
    try {
      const s = await get("/v1/index");
      const backlog = Math.max(0, (s.total || 0) - (s.embedded || 0));
      clear(index, h("div", { class: "grid" },
        [["Documents (lexical)", s.docs], ["Vectors", s.vectors], ["Vector index", s.vector_index], ["Model", s.model || "none"],
          ["Embedded", (s.embedded || 0) + " / " + (s.total || 0)], ["Embedding backlog", backlog]].map(([k, v]) =>
          h("div", { class: "card" }, h("div", { class: "meta" }, k), h("strong", {}, String(v))))));
    } catch (e) { clear(index, failed(e)); }
    try {
      const res = await fetch("/metrics", { cache: "no-store" });
      if (!res.ok) throw new Error("metrics are not served (HTTP " + res.status + ")");
      const text = await res.text();
      const cards = [];
      SERIES.forEach(([label, read], i) => {
        const v = read(text);
        if (v === null) return;
        history[i].push(v);
        if (history[i].length > 30) history[i].shift();
        cards.push(h("div", { class: "card" }, h("div", { class: "meta" }, label), h("strong", {}, String(v)), chart(history[i])));
      });
      clear(charts, cards.length ? cards : empty("No samples yet."));
    } catch (e) { clear(charts, failed(e)); }
  };
  clear(ready, h("p", { class: "state loading" }, "Loading…"));
  tick();
  const t = setInterval(tick, 5000);
  return () => clearInterval(t);
}
