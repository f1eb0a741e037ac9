// Prints the knowledge graph of a stdio MCP server as read_graph returns
// it (structured content, entities and relations sorted), for comparing a
// graph imported into memgate with the reference server's.
//
//   node readgraph.js COMMAND [ARG...]

import { callTool, connectStdio, fail, sortGraph, textOf } from "./common.js";

async function main() {
  const [command, ...args] = process.argv.slice(2);
  if (!command) fail("usage: node readgraph.js COMMAND [ARG...]");
  const conn = await connectStdio(command, args);
  const r = await callTool(conn.client, "read_graph", {});
  if (!r.ok) fail(`read_graph: ${r.protocolError ?? textOf(r.result)}`);
  await conn.close();
  process.stdout.write(JSON.stringify(sortGraph(r.result.structuredContent)) + "\n");
}

main().catch((err) => fail(err?.stack ?? String(err)));
