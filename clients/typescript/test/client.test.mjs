import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { inspect } from "node:util";
import {
  Client, GatewayClient, Hybrid, InvalidArgument, NotFound, PermissionDenied, Unauthenticated,
  Unavailable, VersionConflict, TransportError, MemoryToolHandlers, MemoryToolError,
} from "@memgate/client";
import { url, operator, agent, restricted, skip, uid, waitEmbedded } from "./env.mjs";

test("records: write, get, patch, history, forget", { skip }, async () => {
  const mg = new Client(url, agent);
  const user = uid();
  const w = await mg.write({ type: "preference", content: "Prefers window seats on long flights", scope: { user_id: user }, metadata: { topic: "travel" } });
  assert.equal(w.decision, "accepted");
  const r = await mg.get(w.record.id);
  assert.equal(r.content, "Prefers window seats on long flights");
  assert.deepEqual(r.metadata, { topic: "travel" });
  const p = await mg.patch(r.id, r.version, { content: "Prefers aisle seats on long flights" });
  assert.equal(p.record.version, 2);
  await assert.rejects(mg.patch(r.id, 1, { content: "stale" }), (e) => e instanceof VersionConflict && e.status === 409);
  assert.deepEqual((await mg.history(r.id)).map((v) => v.version), [1, 2]);
  assert.equal((await mg.forget(r.id)).status, "forgotten");
});

test("procedure outcome; restore (operators only)", { skip }, async () => {
  const mg = new Client(url, agent);
  const w = await mg.write({ type: "skill", content: "To rotate the API key: open settings, click rotate, update the vault", scope: { user_id: uid() } });
  const res = await mg.recordOutcome(w.record.id, 1);
  assert.equal(typeof res, "object");
  assert.equal((await new Client(url, operator).restore(w.record.id)).status, "active");
  await assert.rejects(mg.restore(w.record.id), PermissionDenied);
});

test("list pages and iterates", { skip }, async () => {
  const mg = new Client(url, agent);
  const user = uid();
  for (const c of ["The garden shed is painted green", "Invoices are due on the 5th", "The cat sleeps in the attic"]) {
    await mg.write({ type: "belief", content: c, scope: { user_id: user } });
  }
  const page = await mg.list({ scope: { user_id: user }, limit: 2 });
  assert.equal(page.records.length, 2);
  assert.ok(page.next_cursor);
  const all = [];
  for await (const r of mg.records({ scope: { user_id: user }, limit: 2 })) all.push(r);
  assert.equal(all.length, 3);
});

test("search by meaning, with explain; context", { skip }, async () => {
  const mg = new Client(url, agent);
  const user = uid();
  await mg.write({ type: "preference", content: "Alice is vegetarian and never eats meat", scope: { user_id: user } });
  await mg.write({ type: "belief", content: "The office printer is on the third floor", scope: { user_id: user } });
  await waitEmbedded();
  const res = await mg.search("what food should I order for her?", { scope: { user_id: user }, k: 2, explain: true });
  assert.match(res.results[0].record.content, /vegetarian/);
  assert.ok(res.results[0].explain);
  const env = await mg.context("order lunch for Alice", { scope: { user_id: user }, budget_tokens: 500 });
  assert.match(env.markdown, /vegetarian/);
});

test("knowledge: ingest, search with a res:// citation, cite, forget", { skip }, async () => {
  const mg = new Client(url, agent);
  const scope = { project_id: "kn-" + uid() };
  const doc = "# Runbook\n\nGeneral notes.\n\n## Rotating the pager\n\nThe pager rotates every Tuesday at noon.\n";
  const res = await mg.ingest("https://wiki.example/runbook.md", doc, { scope });
  assert.equal(res.outcome, "created");
  assert.equal((await mg.ingest("https://wiki.example/runbook.md", doc, { scope })).outcome, "unchanged");
  assert.ok((await mg.resources()).some((r) => r.resource_id === res.resource_id));
  const { results } = await mg.searchResources("when does the pager rotate", { scope });
  const top = results[0];
  assert.match(top.citation, /^res:\/\//);
  const src = await mg.source(top.resource_id, `${top.line_start}-${top.line_end}`);
  assert.match(src.text, /every Tuesday at noon/);
  assert.equal((await mg.forgetResource(res.resource_id)).forgotten_chunks, res.chunks.length);
  await assert.rejects(mg.source(res.resource_id), NotFound);
  await assert.rejects(mg.ingest("x.md"), TypeError);
});

test("errors carry memgate's code and field", { skip }, async () => {
  const mg = new Client(url, agent);
  await assert.rejects(mg.write({ type: "nope", content: "x" }), (e) => e instanceof InvalidArgument && e.field === "type" && e.status === 400);
  await assert.rejects(mg.get("01JD7Z5Q3X0M8K2N4P6R8T0V2W"), NotFound);
  await assert.rejects(mg.listApprovals(), (e) => e instanceof PermissionDenied && e.code === "permission_denied");
  await assert.rejects(new Client(url, "mg_bad").whoami(), Unauthenticated);
  assert.ok(!inspect(mg).includes(agent));
  assert.ok(!JSON.stringify(mg).includes(agent));
  await assert.rejects(new Client("http://127.0.0.1:9", agent, { retries: 0 }).whoami(), TransportError);
});

test("only idempotent requests are retried", async () => {
  const calls = [];
  const srv = http.createServer((req, res) => {
    calls.push(req.method);
    req.resume();
    res.setHeader("Content-Type", "application/json");
    if (req.method === "GET" && calls.length > 1) return res.end('{"id":"p1","name":"x","kind":"agent","workspace":"default"}');
    res.statusCode = 503;
    res.setHeader("Retry-After", "0");
    res.end('{"error":{"code":"unavailable","message":"busy","details":{}}}');
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${srv.address().port}`;
  try {
    assert.equal((await new Client(base, "t").whoami()).id, "p1");
    assert.deepEqual(calls, ["GET", "GET"]);
    calls.length = 0;
    await assert.rejects(new Client(base, "t").write({ type: "belief", content: "x" }), Unavailable);
    assert.deepEqual(calls, ["POST"]);
  } finally {
    srv.close();
  }
});

test("approvals for operators", { skip }, async () => {
  const intern = new Client(url, restricted);
  const op = new Client(url, operator);
  const w = await intern.write({ type: "belief", content: "The staging database moved to host db-7", scope: { user_id: uid() } });
  assert.equal(w.decision, "queued");
  const page = await op.listApprovals({ status: "pending" });
  assert.ok(JSON.stringify(page.items).includes(w.approval_id));
  await op.approve(w.approval_id);
  assert.equal((await op.get(w.record.id)).status, "active");
  assert.ok((await op.listAgents()).some((a) => a.name === "intern"));
});

test("memory files and the memory tool handlers", { skip }, async () => {
  const mg = new Client(url, agent);
  const scope = { user_id: uid() };
  const created = await mg.createFile("/memories/notes.md", "first\n", { scope });
  const id = created.file.id;
  assert.equal((await mg.listFiles({ path: "/memories/notes.md", scope }))[0].id, id);
  await mg.updateFile(id, { content: "second\n" });
  assert.equal((await mg.getFile(id)).content, "second\n");
  assert.equal((await mg.fileHistory(id)).length, 2);
  const h = new MemoryToolHandlers(mg, { scope });
  assert.match(await h.view({ command: "view", path: "/memories/notes.md" }), /second/);
  await assert.rejects(h.view({ command: "view", path: "/memories/none.md" }), (e) => e instanceof MemoryToolError && /does not exist/.test(e.content));
  const res = await mg.memoryTool({ type: "tool_use", id: "toolu_1", name: "memory", input: { command: "delete", path: "/memories/notes.md" } }, { scope });
  assert.equal(res.tool_use_id, "toolu_1");
  assert.equal(res.content, "Successfully deleted /memories/notes.md");
});

test("gateway helper: persist then recall; failures never throw", { skip }, async () => {
  const u = await new Client(url, operator).createUser(uid());
  const events = [];
  const h = new Hybrid(new GatewayClient(url, u.user_id, u.user_key), { sink: (e) => events.push(e) });
  await h.persistAfterRun("c1", "My cat is called Miso", "Nice name!");
  assert.deepEqual(events.map((e) => e.name), ["memory_gateway_add_succeeded", "memory_gateway_flush_succeeded"]);
  const items = await h.recallBeforeRun("c1", "what is my cat called?");
  assert.ok(items.some((i) => /Miso/.test(i.text)));
  assert.ok(items.every((i) => i.untrusted === true));
  assert.ok(!JSON.stringify(events).includes(u.user_key));
  events.length = 0;
  const bad = new Hybrid(new GatewayClient(url, "nobody", "mgu_wrong"), { sink: (e) => events.push(e) });
  assert.deepEqual(await bad.recallBeforeRun("c", "q"), []);
  await bad.persistAfterRun("c", "p", "a");
  assert.deepEqual(events.map((e) => [e.name, e.category]), [["memory_gateway_recall_failed", "auth"], ["memory_gateway_add_failed", "auth"]]);
});
