// Parity session: one scripted sequence of the reference memory server's
// tool calls, run against any stdio MCP server, printed as normalised JSON
// so that two servers' outputs can be compared byte for byte.
//
//   node parity.js COMMAND [ARG...]
//
// The server is spawned with this process's environment. Output (stdout):
//
//   {"tools": {...}, "steps": [{"step", "tool", "result"}, ...], "notes": [...]}
//
// "tools" holds the shape of each of the nine tools' input schema (its
// required property paths, all its property paths) and its read-only and
// destructive annotations (with the MCP defaults applied). "steps" holds
// each call's normalised result: the text content parsed as JSON (or the
// text when it is not JSON) and the structured content, graphs sorted
// where the reference server defines no order; a tool error is
// {"error": true} and a protocol-level failure {"protocolError": true}.
// "notes" carries error messages for a human reading a failure; it is not
// meant to be compared.

import { callTool, compatTools, connectStdio, fail, parseText, sortGraph } from "./common.js";

// The scripted session. Names carry spaces and capitals on purpose, two
// entities share an observation text, and some calls name entities or
// relations that do not exist.
const session = [
  ["empty graph", "read_graph", {}],
  ["create three", "create_entities", {
    entities: [
      { name: "Alice Smith", entityType: "person", observations: ["is a software engineer", "prefers PostgreSQL for backend work"] },
      { name: "Acme Corp", entityType: "organization", observations: ["builds rockets in Nevada"] },
      { name: "Bob", entityType: "person", observations: ["is a software engineer"] },
    ],
  }],
  ["create with an existing name", "create_entities", {
    entities: [
      { name: "Alice Smith", entityType: "robot", observations: ["should never be stored"] },
      { name: "Carol", entityType: "person", observations: [] },
    ],
  }],
  ["relations", "create_relations", {
    relations: [
      { from: "Alice Smith", to: "Acme Corp", relationType: "works_at" },
      { from: "Bob", to: "Acme Corp", relationType: "works_at" },
      { from: "Alice Smith", to: "Bob", relationType: "mentors" },
    ],
  }],
  ["relations with an existing triple", "create_relations", {
    relations: [
      { from: "Alice Smith", to: "Acme Corp", relationType: "works_at" },
      { from: "Carol", to: "Alice Smith", relationType: "knows" },
      { from: "Acme Corp", to: "Bob", relationType: "employs" },
    ],
  }],
  ["add observations", "add_observations", {
    observations: [
      { entityName: "Alice Smith", contents: ["speaks French", "is a software engineer"] },
      { entityName: "Bob", contents: ["plays chess on Sundays"] },
      { entityName: "Carol", contents: ["owns a grey cat"] },
    ],
  }],
  ["add observations to a missing entity", "add_observations", {
    observations: [
      { entityName: "Carol", contents: ["runs marathons"] },
      { entityName: "Nobody Here", contents: ["does not exist"] },
    ],
  }],
  ["open after the failed add", "open_nodes", { names: ["Carol"] }],
  ["delete observations", "delete_observations", {
    deletions: [
      { entityName: "Alice Smith", observations: ["speaks French", "was never said"] },
      { entityName: "Nobody Here", observations: ["does not exist"] },
    ],
  }],
  ["open after deleting observations", "open_nodes", { names: ["Alice Smith"] }],
  ["delete relations", "delete_relations", {
    relations: [
      { from: "Alice Smith", to: "Bob", relationType: "mentors" },
      { from: "Bob", to: "Carol", relationType: "never_related" },
    ],
  }],
  ["graph before deleting entities", "read_graph", {}],
  ["search a word of an observation", "search_nodes", { query: "chess" }],
  ["search an entity type", "search_nodes", { query: "person" }],
  ["search ignoring case", "search_nodes", { query: "ACME" }],
  ["search part of a word", "search_nodes", { query: "postgres" }],
  ["search with no match", "search_nodes", { query: "zeppelin" }],
  ["delete entities", "delete_entities", { entityNames: ["Acme Corp", "Nobody Here"] }],
  ["graph after deleting entities", "read_graph", {}],
  ["open existing and missing", "open_nodes", { names: ["Alice Smith", "Bob", "Nobody Here"] }],
  ["re-create a deleted name", "create_entities", {
    entities: [{ name: "Acme Corp", entityType: "organization", observations: ["moved to Texas"] }],
  }],
  ["final graph", "read_graph", {}],
];

// schemaPaths lists the property paths of a JSON schema ("a", "a[].b") and
// the required ones.
function schemaPaths(schema, prefix = "", out = { properties: [], required: [] }, requiredHere = true) {
  if (!schema || typeof schema !== "object") return out;
  if (schema.type === "array" || schema.items) {
    return schemaPaths(schema.items, prefix + "[]", out, requiredHere);
  }
  const req = new Set(schema.required ?? []);
  for (const [name, sub] of Object.entries(schema.properties ?? {})) {
    const p = prefix ? `${prefix}.${name}` : name;
    out.properties.push(p);
    if (requiredHere && req.has(name)) out.required.push(p);
    schemaPaths(sub, p, out, requiredHere && req.has(name));
  }
  return out;
}

function toolShape(tool) {
  const { properties, required } = schemaPaths(tool.inputSchema);
  const a = tool.annotations ?? {};
  const readOnly = a.readOnlyHint ?? false;
  // MCP defaults: destructiveHint true unless the tool is read-only.
  const destructive = readOnly ? false : (a.destructiveHint ?? true);
  return { required: required.sort(), properties: properties.sort(), readOnly, destructive };
}

function normalise(tool, r, notes, step) {
  if (r.protocolError !== undefined) {
    notes.push(`${step}: protocol error: ${r.protocolError}`);
    return { protocolError: true };
  }
  if (r.isError) {
    notes.push(`${step}: tool error: ${JSON.stringify(r.result.content)}`);
    return { error: true };
  }
  const graphy = ["read_graph", "search_nodes", "open_nodes"].includes(tool);
  let text = parseText(r.result);
  let structured = r.result.structuredContent ?? null;
  if (graphy) {
    text = sortGraph(text);
    structured = sortGraph(structured);
  }
  return { text, structured };
}

async function main() {
  const [command, ...args] = process.argv.slice(2);
  if (!command) fail("usage: node parity.js COMMAND [ARG...]");
  const conn = await connectStdio(command, args);
  const { client } = conn;
  const notes = [];

  const { tools } = await client.listTools();
  const shapes = {};
  for (const name of compatTools) {
    const t = tools.find((x) => x.name === name);
    shapes[name] = t ? toolShape(t) : { missing: true };
  }

  const steps = [];
  for (const [step, tool, args] of session) {
    const r = await callTool(client, tool, args);
    steps.push({ step, tool, result: normalise(tool, r, notes, step) });
  }

  let resource;
  try {
    const res = await client.readResource({ uri: "memory://knowledge-graph" });
    const c = res.contents?.[0] ?? {};
    let body = c.text;
    try {
      body = sortGraph(JSON.parse(c.text));
    } catch {
      // keep the text as it is
    }
    resource = { uri: c.uri, mimeType: c.mimeType ?? null, body };
  } catch (err) {
    notes.push(`resource read: ${err?.message ?? err}`);
    resource = { error: true };
  }
  steps.push({ step: "knowledge-graph resource", tool: "resources/read", result: resource });

  await conn.close();
  if (conn.stderr.length) notes.push(`server stderr (tail): ${conn.stderr.join("").slice(-4000)}`);
  process.stdout.write(JSON.stringify({ tools: shapes, steps, notes }, null, 2) + "\n");
}

main().catch((err) => fail(err?.stack ?? String(err)));
