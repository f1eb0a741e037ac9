// memgate session: drives memgate's MCP server with the official
// TypeScript SDK over stdio and over Streamable HTTP, calls every tool with
// valid arguments and checks the results, then checks that HTTP without a
// token, with a bogus one and with a revoked one is refused.
//
// Configuration comes from the environment (tokens never on the command
// line, never printed):
//
//   MGTEST_BIN             memgate binary; stdio runs `$MGTEST_BIN mcp`
//                          with this environment (MEMGATE_DATA_DIR and
//                          MEMGATE_MCP_AGENT select the data and the agent)
//   MGTEST_URL             the /mcp URL of a running `memgate serve`
//   MGTEST_AGENT_TOKEN     an agent token for MGTEST_URL
//   MGTEST_REVOKED_TOKEN   a revoked agent token
//
// On success it prints a JSON summary on stdout and exits 0; on the first
// failed check it prints FAIL: ... on stderr and exits 1.

import { addSecret, callTool, check, compatTools, connectHTTP, connectStdio, fail, parseText, textOf } from "./common.js";

export const ownTools = [
  "memory_write",
  "memory_query",
  "memory_get",
  "memory_history",
  "memory_forget",
  "graph_upsert_node",
  "graph_upsert_edge",
  "graph_neighbors",
  "graph_path",
];

const readOnlyTools = ["memory_query", "memory_get", "memory_history", "graph_neighbors", "graph_path", "read_graph", "search_nodes", "open_nodes"];
const destructiveTools = ["memory_forget", "delete_entities", "delete_observations", "delete_relations"];

function env(name) {
  const v = process.env[name];
  if (!v) fail(`environment variable ${name} is not set`);
  return v;
}

// data returns a tool result's structured content, or its text parsed as
// JSON when there is none.
function data(result) {
  return result.structuredContent ?? parseText(result);
}

// The Session runs one transport's calls and remembers which tools it
// called successfully.
class Session {
  constructor(label, conn) {
    this.label = label;
    this.client = conn.client;
    this.conn = conn;
    this.called = new Set();
  }

  where(tool) {
    const tail = this.conn.stderr.length ? `\nserver stderr (tail):\n${this.conn.stderr.join("").slice(-3000)}` : "";
    return `[${this.label}] ${tool}` + tail;
  }

  // ok calls a tool that must succeed and returns its data.
  async ok(tool, args) {
    const r = await callTool(this.client, tool, args);
    if (r.protocolError !== undefined) fail(`${this.where(tool)}: protocol error: ${r.protocolError}\nargs: ${JSON.stringify(args)}`);
    if (r.isError) fail(`${this.where(tool)}: tool error: ${textOf(r.result)}\nargs: ${JSON.stringify(args)}`);
    this.called.add(tool);
    return data(r.result);
  }

  // toolError calls a tool that must fail as a tool result (isError), not
  // as a protocol error, and returns the result's text.
  async toolError(tool, args, wantCode) {
    const r = await callTool(this.client, tool, args);
    if (r.protocolError !== undefined) fail(`${this.where(tool)}: a failing call must be a tool result with isError, got a protocol error: ${r.protocolError}`);
    if (!r.isError) fail(`${this.where(tool)}: want a tool error for ${JSON.stringify(args)}, got ${JSON.stringify(data(r.result))}`);
    const text = textOf(r.result);
    if (wantCode && !text.includes(wantCode)) fail(`${this.where(tool)}: tool error should carry the code ${wantCode}, got: ${text}`);
    return text;
  }

  expect(cond, tool, msg, got) {
    if (!cond) fail(`${this.where(tool)}: ${msg}${got === undefined ? "" : `\ngot: ${JSON.stringify(got)}`}`);
  }
}

function idsOf(results) {
  return (results ?? []).map((x) => x?.record?.id);
}

async function checkTools(s) {
  const init = s.client.getServerVersion();
  s.expect(init?.name, "initialize", "server info has no name", init);
  const caps = s.client.getServerCapabilities();
  s.expect(caps?.tools, "initialize", "server does not announce the tools capability", caps);

  const { tools } = await s.client.listTools();
  const byName = new Map(tools.map((t) => [t.name, t]));
  for (const name of [...ownTools, ...compatTools]) {
    const t = byName.get(name);
    s.expect(t, "tools/list", `tool ${name} is missing`, [...byName.keys()]);
    s.expect(t.description && t.description.length >= 20, "tools/list", `tool ${name} has no real description`, t.description);
    s.expect(t.inputSchema?.type === "object", "tools/list", `tool ${name}'s input schema is not an object schema`, t.inputSchema);
  }
  for (const name of readOnlyTools) {
    s.expect(byName.get(name).annotations?.readOnlyHint === true, "tools/list", `${name} should be annotated read-only`, byName.get(name).annotations);
  }
  for (const name of destructiveTools) {
    const a = byName.get(name).annotations ?? {};
    s.expect(a.readOnlyHint !== true && a.destructiveHint !== false, "tools/list", `${name} should be annotated destructive`, a);
  }
  return tools.length;
}

// memgateTools calls memgate's own nine tools.
async function memgateTools(s) {
  const project = `tsclient-${s.label}`;
  const scope = { project_id: project };
  const content = `For job claims in the ${s.label} queue we use SELECT FOR UPDATE SKIP LOCKED`;

  // memory_write → an accepted record, cited.
  const w = await s.ok("memory_write", { type: "decision", content, entities: [`system:jobs-${s.label}`], scope });
  const id = w?.record?.id;
  s.expect(typeof id === "string" && id.length > 0, "memory_write", "no record id in the answer", w);
  s.expect(w.decision === "accepted", "memory_write", "a standard agent's decision should be accepted", w);
  s.expect(w.citation === `mem://${id}@v1`, "memory_write", "want the citation mem://ID@v1", w);

  // The same write again is a duplicate of the same record.
  const dup = await s.ok("memory_write", { type: "decision", content, entities: [`system:jobs-${s.label}`], scope });
  s.expect(dup?.decision === "duplicate" && dup.record?.id === id, "memory_write", "re-writing the same content should answer the existing record as a duplicate", dup);

  // memory_get → the record as written, with its provenance.
  const got = await s.ok("memory_get", { id });
  s.expect(got?.id === id && got.content === content && got.type === "decision", "memory_get", "does not return the written record", got);
  s.expect(got.scope?.project_id === project && got.entities?.includes(`system:jobs-${s.label}`), "memory_get", "scope or entities lost", got);
  s.expect(got.source?.agent && got.status === "active" && got.version === 1, "memory_get", "want an active version 1 with its source agent", got);
  s.agent = got.source.agent;

  // memory_query → finds it within its scope, and not within another.
  const q = await s.ok("memory_query", { query: "SKIP LOCKED job claims", scope });
  s.expect(Array.isArray(q?.results) && idsOf(q.results)[0] === id, "memory_query", "the written record is not the top result", q);
  s.expect(q.results[0].citation === `mem://${id}@v1`, "memory_query", "result lacks its citation", q.results[0]);
  const other = await s.ok("memory_query", { query: "SKIP LOCKED job claims", scope: { project_id: `${project}-other` } });
  s.expect(!idsOf(other?.results).includes(id), "memory_query", "a record of another project is found in this one", other);

  // memory_history → exactly version 1.
  const h = await s.ok("memory_history", { id });
  s.expect(h?.versions?.length === 1 && h.versions[0].version === 1 && h.versions[0].content === content, "memory_history", "want one version", h);

  // Graph: two nodes, an edge, neighbours and a path.
  const alice = `person:alice-${s.label}`;
  const jobs = `system:jobs-${s.label}`;
  const n1 = await s.ok("graph_upsert_node", { label: "person", natural_key: `alice-${s.label}`, properties: { role: "maintainer" } });
  s.expect(n1?.node?.ref === alice && n1.node.properties?.role === "maintainer", "graph_upsert_node", "node answer lacks its ref or properties", n1);
  const n2 = await s.ok("graph_upsert_node", { label: "system", natural_key: `jobs-${s.label}` });
  s.expect(n2?.node?.ref === jobs, "graph_upsert_node", "node answer lacks its ref", n2);
  const e = await s.ok("graph_upsert_edge", { from: alice, to: jobs, relation: "WORKS_WITH" });
  s.expect(e?.created === true && e.edge?.relation === "WORKS_WITH", "graph_upsert_edge", "want a created WORKS_WITH edge", e);

  const nb = await s.ok("graph_neighbors", { node: alice });
  s.expect(
    Array.isArray(nb?.neighbors) && nb.neighbors.some((x) => x?.node?.ref === jobs && x.relation === "WORKS_WITH"),
    "graph_neighbors",
    `${jobs} is not a neighbour of ${alice}`,
    nb,
  );
  const p = await s.ok("graph_path", { from: alice, to: jobs });
  s.expect(
    p?.found === true && p.hops?.length === 1 && p.hops[0].node?.ref === jobs && p.hops[0].relation === "WORKS_WITH",
    "graph_path",
    `want the one hop ${alice} -WORKS_WITH-> ${jobs}`,
    p,
  );
  await s.toolError("graph_path", { from: jobs, to: `person:nobody-${s.label}` }, "not_found");

  // A failed call is a tool result carrying the error code.
  await s.toolError("memory_get", { id: "0190c0de-0000-7000-8000-000000000000" }, "not_found");
  await s.toolError("memory_write", { type: "no-such-type", content: "x", scope }, "invalid_argument");
  await s.toolError("graph_upsert_edge", { from: alice, to: jobs, relation: "NOT_A_RELATION" }, "invalid_argument");

  // memory_forget → only a tombstone is left, and search no longer finds it.
  const f = await s.ok("memory_forget", { id });
  s.expect(f?.record?.id === id && f.record.status === "forgotten", "memory_forget", "answer is not the forgotten record", f);
  const tomb = await s.ok("memory_get", { id });
  s.expect(tomb?.status === "forgotten" && tomb.content === "", "memory_get", "a forgotten record should read back as a tombstone without content", tomb);
  const q2 = await s.ok("memory_query", { query: "SKIP LOCKED job claims", scope });
  s.expect(!idsOf(q2?.results).includes(id), "memory_query", "a forgotten record is still found", q2);
  return id;
}

// compatibilityTools calls the reference server's nine tools and checks
// that what they write is also visible to memory_query.
async function compatibilityTools(s) {
  const ada = `Ada ${s.label}`;
  const lab = `Analytical Lab ${s.label}`;
  const c = await s.ok("create_entities", {
    entities: [
      { name: ada, entityType: "person", observations: [`wrote the first ${s.label} program for the engine`] },
      { name: lab, entityType: "organization", observations: [] },
    ],
  });
  const created = c?.entities;
  s.expect(Array.isArray(created) && created.length === 2, "create_entities", "want both entities back", c);
  const again = await s.ok("create_entities", { entities: [{ name: ada, entityType: "person", observations: [] }] });
  s.expect(again?.entities?.length === 0, "create_entities", "an existing name must be skipped", again);

  const r = await s.ok("create_relations", { relations: [{ from: ada, to: lab, relationType: "works_at" }] });
  s.expect(r?.relations?.length === 1, "create_relations", "want the new relation back", r);

  const o = await s.ok("add_observations", { observations: [{ entityName: ada, contents: ["corresponded with Babbage"] }] });
  const added = o?.results?.[0]?.addedObservations;
  s.expect(Array.isArray(added) && added.length === 1, "add_observations", "want one added observation", o);
  await s.toolError("add_observations", { observations: [{ entityName: `Nobody ${s.label}`, contents: ["x"] }] });

  const found = await s.ok("search_nodes", { query: "Babbage" });
  s.expect(found?.entities?.some((e) => e.name === ada), "search_nodes", "search for an observation word does not find the entity", found);
  const opened = await s.ok("open_nodes", { names: [ada] });
  s.expect(opened?.entities?.length === 1 && opened.entities[0].observations.includes("corresponded with Babbage"), "open_nodes", "entity lacks its observation", opened);
  s.expect(opened?.relations?.some((x) => x.from === ada && x.to === lab && x.relationType === "works_at"), "open_nodes", "entity lacks its relation", opened);
  const g = await s.ok("read_graph", {});
  s.expect(g?.entities?.some((e) => e.name === lab) && Array.isArray(g?.relations), "read_graph", "graph lacks an entity", g);

  // What the compatibility tools write is memory too.
  const q = await s.ok("memory_query", { query: `first ${s.label} program engine` });
  s.expect(JSON.stringify(q).includes(`wrote the first ${s.label} program for the engine`), "memory_query", "an observation written by create_entities is not found by memory_query", q);

  await s.ok("delete_observations", { deletions: [{ entityName: ada, observations: ["corresponded with Babbage"] }] });
  await s.ok("delete_relations", { relations: [{ from: ada, to: lab, relationType: "works_at" }] });
  const after = await s.ok("open_nodes", { names: [ada] });
  s.expect(!after.entities[0].observations.includes("corresponded with Babbage"), "delete_observations", "observation still there", after);
  s.expect(after.relations.length === 0, "delete_relations", "relation still there", after);
  await s.ok("delete_entities", { entityNames: [ada, lab] });
  const gone = await s.ok("open_nodes", { names: [ada, lab] });
  s.expect(gone.entities.length === 0, "delete_entities", "entities still there", gone);
}

// shared carries a record from the first session to the second.
const shared = {};

async function runSession(label, conn) {
  const s = new Session(label, conn);
  const tools = await checkTools(s);
  const forgotten = await memgateTools(s);
  await compatibilityTools(s);
  const missed = [...ownTools, ...compatTools].filter((t) => !s.called.has(t));
  check(missed.length === 0, `[${label}] tools never called successfully: ${missed.join(", ")}`);
  // A record left by the other transport's session is there, written by
  // the same agent: both transports act as one principal on one store.
  if (shared.kept) {
    const k = await s.ok("memory_get", { id: shared.kept.id });
    s.expect(k?.content === shared.kept.content && k.source?.agent === s.agent, "memory_get", `the record the ${shared.kept.by} session wrote is not there as this agent's`, k);
  } else {
    const content = `The ${label} session leaves this belief for the next session to read`;
    const w = await s.ok("memory_write", { type: "belief", content, scope: { project_id: `tsclient-${label}` } });
    shared.kept = { id: w.record.id, content, by: label };
  }
  await conn.close();
  return { tools, called: [...s.called].sort(), forgotten_record: forgotten };
}

// refused checks that connecting with token is answered 401.
async function refused(url, token, what) {
  try {
    const conn = await connectHTTP(url, token);
    await conn.close();
  } catch (err) {
    if (err?.code === 401) return 401;
    fail(`HTTP ${what}: want the connection refused with 401, got: ${err?.message ?? err}`);
  }
  fail(`HTTP ${what}: the connection was accepted`);
}

async function main() {
  const bin = env("MGTEST_BIN");
  const url = env("MGTEST_URL");
  const token = env("MGTEST_AGENT_TOKEN");
  const revoked = env("MGTEST_REVOKED_TOKEN");
  addSecret(token);
  addSecret(revoked);

  const summary = {};
  summary.stdio = await runSession("stdio", await connectStdio(bin, ["mcp"]));
  let http;
  try {
    http = await connectHTTP(url, token);
  } catch (err) {
    fail(`HTTP connect with the agent token: ${err?.message ?? err}`);
  }
  summary.http = await runSession("http", http);
  summary.refused = {
    no_token: await refused(url, "", "without a token"),
    bogus_token: await refused(url, "mg_00000000000000000000000000_notarealsecret", "with a bogus token"),
    revoked_token: await refused(url, revoked, "with a revoked token"),
  };
  process.stdout.write(JSON.stringify(summary) + "\n");
}

main().catch((err) => fail(err?.stack ?? String(err)));
