// The drop-in side by side (issue 14): the official TypeScript client
// drives the reference memory server (@modelcontextprotocol/server-memory,
// pinned in package.json) and `memgate mcp --dropin-only` over stdio with
// the same corpus and calls, and prints, per server and tool, the p50 and
// p95 latency of the timed calls (and entities/s for create_entities), the
// ratio reference/memgate, and one JSON line. Run it through
// scripts/mcp-bench.sh, which builds memgate and prepares its data
// directory:
//
//   node kgbench.js --memgate BIN --data-dir DIR --agent NAME [--entities 10000] [--calls 200] [--only memgate]
//
// --only memgate skips the reference (whose create_entities rewrites its
// whole file per call, so at 100,000 entities it alone takes many minutes).
//
// The corpus is generated (deterministic): entities named like people and
// projects, three observations each in the style of conversation turns.
// Timed calls: create_entities in batches of 100 (the whole corpus),
// then --calls calls each of search_nodes with a keyword, search_nodes
// with a question, and open_nodes with three names.

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectStdio, callTool, fail } from "./common.js";

function args() {
  const a = { entities: 10000, calls: 200 };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, "");
    a[k.replace(/-(.)/g, (_, c) => c.toUpperCase())] = argv[i + 1];
  }
  a.entities = Number(a.entities);
  a.calls = Number(a.calls);
  if (!a.memgate || !a.dataDir || !a.agent) fail("usage: node kgbench.js --memgate BIN --data-dir DIR --agent NAME [--entities N] [--calls N]");
  return a;
}

const topics = ["payments", "search", "billing", "onboarding", "mobile", "kernel", "storage", "network"];
const cities = ["Lisbon", "Berlin", "Osaka", "Lima", "Nairobi", "Oslo", "Toronto", "Hanoi"];
const verbs = ["fixed", "reviewed", "designed", "rolled back", "load-tested", "documented"];

// entity i of the corpus.
function entity(i) {
  const t = topics[i % topics.length];
  const c = cities[Math.floor(i / 7) % cities.length];
  const v = verbs[Math.floor(i / 3) % verbs.length];
  return {
    name: `person ${i}`,
    entityType: ["person", "project", "team"][i % 3],
    observations: [
      `said they have worked on the ${t} team since ${2000 + (i % 25)}`,
      `mentioned moving to ${c} last spring and learning ${1 + (i % 4)} languages`,
      `${v} the ${topics[Math.floor(i / 5) % topics.length]} design document in ticket ${i}`,
    ],
  };
}

// A seeded generator, so both servers get the same calls.
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

async function timed(client, name, argsOf, n) {
  const ms = [];
  let hits = 0;
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    const r = await callTool(client, name, argsOf(i));
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (!r.ok) fail(`${name}: ${JSON.stringify(r.protocolError ?? r.result?.content)}`);
    hits += r.result.structuredContent?.entities?.length ?? 0;
  }
  return { p50: pct(ms, 50), p95: pct(ms, 95), hits: hits / n };
}

// rssMB returns the server process's resident memory (MB) now and at its
// peak, from /proc (null where there is none).
function rssMB(pid) {
  try {
    const st = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (k) => Number(st.match(new RegExp(`^${k}:\\s+(\\d+) kB`, "m"))[1]);
    return { now: Math.round(kb("VmRSS") / 1024), peak: Math.round(kb("VmHWM") / 1024) };
  } catch {
    return null;
  }
}

async function run(label, command, cmdArgs, a) {
  const conn = await connectStdio(command, cmdArgs);
  const out = { server: label };
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < a.entities; i += 100) {
    const batch = [];
    for (let j = i; j < Math.min(i + 100, a.entities); j++) batch.push(entity(j));
    const r = await callTool(conn.client, "create_entities", { entities: batch });
    if (!r.ok) fail(`${label} create_entities: ${JSON.stringify(r.protocolError ?? r.result?.content)}`);
  }
  out.create_entities_per_s = a.entities / (Number(process.hrtime.bigint() - t0) / 1e9);
  const r = rng(14);
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const keyword = [], question = [], names = [];
  for (let i = 0; i < a.calls; i++) {
    keyword.push(`ticket ${Math.floor(r() * a.entities)}`);
    question.push(`who ${pick(verbs)} the ${pick(topics)} design document?`);
    names.push([0, 1, 2].map(() => `person ${Math.floor(r() * a.entities)}`));
  }
  out.search_keyword = await timed(conn.client, "search_nodes", (i) => ({ query: keyword[i] }), a.calls);
  out.search_question = await timed(conn.client, "search_nodes", (i) => ({ query: question[i] }), a.calls);
  out.open_nodes = await timed(conn.client, "open_nodes", (i) => ({ names: names[i] }), a.calls);
  out.rss_mb = rssMB(conn.pid());
  await conn.close();
  return out;
}

const a = args();
const tmp = mkdtempSync(join(tmpdir(), "kgbench-"));
try {
  const refBin = join(import.meta.dirname, "node_modules", "@modelcontextprotocol", "server-memory", "dist", "index.js");
  process.env.MEMORY_FILE_PATH = join(tmp, "memory.jsonl");
  const mg0 = a.only === "memgate";
  if (a.only && !mg0) fail("--only takes memgate");
  const ref = mg0 ? null : await run("reference", process.execPath, [refBin], a);
  const mg = await run("memgate", a.memgate, ["mcp", "--agent", a.agent, "--data-dir", a.dataDir, "--dropin-only"], a);
  if (mg0) {
    console.log(`${a.entities} entities, ${a.calls} timed calls per tool, stdio, official TypeScript client (memgate only)`);
    console.log(`create_entities (entities/s)      ${mg.create_entities_per_s.toFixed(1)}`);
    for (const k of ["search_keyword", "search_question", "open_nodes"]) {
      console.log(`${k.padEnd(16)} p50 ${mg[k].p50.toFixed(1)} ms   p95 ${mg[k].p95.toFixed(1)} ms   entities per answer ${mg[k].hits.toFixed(1)}`);
    }
    if (mg.rss_mb) console.log(`server RSS after the calls       ${mg.rss_mb.now} MB (peak ${mg.rss_mb.peak} MB)`);
    console.log(JSON.stringify({ bench: "mcp-dropin", entities: a.entities, calls: a.calls, memgate: mg }));
    process.exit(0);
  }
  const f = (x) => x.toFixed(1).padStart(9);
  console.log(`${a.entities} entities, ${a.calls} timed calls per tool, stdio, official TypeScript client`);
  console.log(`${"".padEnd(34)}${"reference".padStart(14)}${"memgate".padStart(14)}${"ratio".padStart(9)}`);
  console.log(`${"create_entities (entities/s)".padEnd(34)}${f(ref.create_entities_per_s).padStart(14)}${f(mg.create_entities_per_s).padStart(14)}${(mg.create_entities_per_s / ref.create_entities_per_s).toFixed(1).padStart(9)}x`);
  for (const k of ["search_keyword", "search_question", "open_nodes"]) {
    for (const p of ["p50", "p95"]) {
      console.log(`${`${k} ${p} (ms)`.padEnd(34)}${f(ref[k][p]).padStart(14)}${f(mg[k][p]).padStart(14)}${(ref[k][p] / mg[k][p]).toFixed(1).padStart(9)}x`);
    }
    console.log(`${`${k} entities per answer`.padEnd(34)}${f(ref[k].hits).padStart(14)}${f(mg[k].hits).padStart(14)}`);
  }
  if (ref.rss_mb && mg.rss_mb) {
    console.log(`${"server RSS after the calls (MB)".padEnd(34)}${f(ref.rss_mb.now).padStart(14)}${f(mg.rss_mb.now).padStart(14)}`);
  }
  console.log(JSON.stringify({ bench: "mcp-dropin", entities: a.entities, calls: a.calls, reference: ref, memgate: mg }));
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
