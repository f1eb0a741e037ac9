// Helpers shared by the session and parity scripts: connecting the official
// TypeScript SDK client over stdio or Streamable HTTP, normalising tool
// results, and failing with a clear message that never carries a secret.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

// The reference memory server's nine tools, which memgate serves too.
export const compatTools = [
  "create_entities",
  "create_relations",
  "add_observations",
  "delete_entities",
  "delete_observations",
  "delete_relations",
  "read_graph",
  "search_nodes",
  "open_nodes",
];

// Secret values (bearer tokens) that must never reach stdout or stderr.
const secrets = new Set();

export function addSecret(s) {
  if (s) secrets.add(s);
}

export function redact(text) {
  let out = String(text);
  for (const s of secrets) out = out.split(s).join("<redacted>");
  return out;
}

// fail prints a message on stderr and exits with status 1.
export function fail(msg) {
  process.stderr.write(redact(`FAIL: ${msg}`) + "\n");
  process.exit(1);
}

export function check(cond, msg) {
  if (!cond) fail(msg);
}

function newClient() {
  return new Client({ name: "memgate-tsclient-test", version: "1.0.0" });
}

// connectStdio spawns command with args and this process's environment
// (the SDK passes only a safe subset by default, which would drop
// MEMGATE_* and MEMORY_FILE_PATH), less the test's own MGTEST_* variables,
// which carry tokens the server has no business seeing. The child's
// stderr is collected for failure messages.
export async function connectStdio(command, args) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("MGTEST_")));
  const transport = new StdioClientTransport({
    command,
    args,
    env,
    stderr: "pipe",
  });
  const stderr = [];
  transport.stderr?.on("data", (chunk) => {
    stderr.push(String(chunk));
    if (stderr.length > 200) stderr.shift();
  });
  const client = newClient();
  try {
    await client.connect(transport);
  } catch (err) {
    fail(`stdio connect to ${command}: ${err?.message ?? err}\nserver stderr:\n${stderr.join("")}`);
  }
  return { client, stderr, pid: () => transport.pid, close: () => client.close() };
}

// connectHTTP connects to a Streamable HTTP endpoint, sending token (if
// any) as a bearer token on every request.
export async function connectHTTP(url, token) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = newClient();
  await client.connect(transport);
  return {
    client,
    stderr: [],
    close: async () => {
      try {
        await transport.terminateSession();
      } catch {
        // servers may answer 405 to DELETE; closing is enough
      }
      await client.close();
    },
  };
}

// textOf returns the concatenated text content of a tool result.
export function textOf(result) {
  return (result?.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("");
}

// parseText returns the result's text content parsed as JSON, or the text
// itself when it is not JSON.
export function parseText(result) {
  const t = textOf(result);
  try {
    return JSON.parse(t);
  } catch {
    return t;
  }
}

// callTool calls a tool and returns {ok, result} for a normal result,
// {ok:false, isError:true, result} for a tool error and
// {ok:false, protocolError:message} when the call failed at the protocol
// level.
export async function callTool(client, name, args) {
  try {
    const result = await client.callTool({ name, arguments: args });
    if (result.isError) return { ok: false, isError: true, result };
    return { ok: true, result };
  } catch (err) {
    return { ok: false, protocolError: err?.message ?? String(err) };
  }
}

const byKey = (key) => (a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);
const relKey = (r) => JSON.stringify([r?.from, r?.relationType, r?.to]);

// sortGraph orders a {entities, relations} graph where the reference
// server defines no order: entities by name, relations by triple. The
// observations of an entity keep their order (insertion order in the
// reference server).
export function sortGraph(g) {
  if (!g || typeof g !== "object" || Array.isArray(g)) return g;
  const out = { ...g };
  if (Array.isArray(g.entities)) out.entities = [...g.entities].sort(byKey((e) => e?.name));
  if (Array.isArray(g.relations)) out.relations = [...g.relations].sort(byKey(relKey));
  return out;
}
