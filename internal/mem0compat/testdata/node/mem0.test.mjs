// The official mem0ai npm client (MemoryClient, unmodified) against
// memgate's mem0-compatible API on a real `memgate serve`. Run by the Go
// test TestMem0OfficialClient (cmd/memgate), which sets MEMGATE_URL and
// the tokens; MEM0_TELEMETRY=false keeps the client off the network.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import MemoryClient from "mem0ai";

const host = process.env.MEMGATE_URL;
const agent = process.env.MEMGATE_AGENT_TOKEN;
const restricted = process.env.MEMGATE_RESTRICTED_TOKEN;
const skip = !host || !agent ? "run by the Go test TestMem0OfficialClient" : false;
const uid = () => "u-" + randomUUID().slice(0, 8);

// waitFor polls cond until it returns a value, or fails at the deadline.
async function waitFor(what, cond, ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// waitEmbedded waits until every record has its vector, so a search by
// meaning sees what was just written (memgate's own /v1/index).
async function waitEmbedded() {
  await waitFor("embeddings", async () => {
    const st = await (await fetch(`${host}/v1/index`, { headers: { Authorization: `Bearer ${agent}` } })).json();
    return st.embedded >= st.total && st.vectors >= st.total; // stored and in the index
  });
}

function assertMemoryShape(m) {
  for (const k of ["id", "memory", "hash", "categories", "createdAt", "updatedAt"]) {
    assert.ok(k in m, `memory lacks ${k}: ${JSON.stringify(m)}`);
  }
  assert.equal(typeof m.memory, "string");
  assert.ok(Array.isArray(m.categories));
}

test("key check", { skip }, async () => {
  const client = new MemoryClient({ apiKey: agent, host });
  await client.ping();
  const bad = new MemoryClient({ apiKey: "mg_not_a_token", host });
  await assert.rejects(bad.ping(), (e) => e.name === "AuthenticationError" && e.errorCode === "HTTP_401");
});

test("add without infer, get all, search, get, update, history, delete, delete all", { skip }, async () => {
  const client = new MemoryClient({ apiKey: agent, host });
  const user = uid();
  const added = await client.add([{ role: "user", content: "I am allergic to peanuts" }], {
    userId: user, infer: false, metadata: { topic: "health" },
  });
  assert.equal(added.status, "SUCCEEDED");
  assert.equal(added.results.length, 1);
  const first = added.results[0];
  assert.equal(first.event, "ADD");
  assert.equal(first.data.memory, "I am allergic to peanuts");
  await client.add([{ role: "user", content: "My favourite city for holidays is Kyoto" }], {
    userId: user, infer: false, metadata: { topic: "travel" },
  });

  const all = await client.getAll({ filters: { user_id: user } });
  assert.equal(all.count, 2);
  assert.equal(all.next, null);
  assert.equal(all.results.length, 2);
  all.results.forEach(assertMemoryShape);
  assert.ok(all.results.every((m) => m.userId === user));

  const travel = await client.getAll({ filters: { AND: [{ user_id: user }, { metadata: { topic: "travel" } }] } });
  assert.deepEqual(travel.results.map((m) => m.memory), ["My favourite city for holidays is Kyoto"]);
  assert.deepEqual(travel.results[0].metadata, { topic: "travel" });

  const paged = await client.getAll({ filters: { user_id: user }, page: 1, pageSize: 1 });
  assert.equal(paged.count, 2);
  assert.equal(paged.results.length, 1);
  assert.ok(paged.next);

  await waitEmbedded();
  const found = await client.search("which foods must I avoid?", { filters: { user_id: user }, topK: 2 });
  assert.ok(found.results.length >= 1);
  assert.equal(found.results[0].memory, "I am allergic to peanuts");
  assert.equal(typeof found.results[0].score, "number");
  found.results.forEach(assertMemoryShape);

  const one = await client.get(first.id);
  assertMemoryShape(one);
  assert.equal(one.memory, "I am allergic to peanuts");
  assert.deepEqual(one.metadata, { topic: "health" });

  const updated = await client.update(first.id, { text: "I am allergic to peanuts and cashews" });
  assert.equal(updated.memory, "I am allergic to peanuts and cashews");
  assert.equal((await client.get(first.id)).memory, "I am allergic to peanuts and cashews");

  const hist = await client.history(first.id);
  assert.deepEqual(hist.map((h) => h.event), ["ADD", "UPDATE"]);
  assert.equal(hist[1].oldMemory, "I am allergic to peanuts");
  assert.equal(hist[1].newMemory, "I am allergic to peanuts and cashews");
  assert.equal(hist[0].memoryId, first.id);

  const del = await client.delete(first.id);
  assert.equal(typeof del.message, "string");
  await assert.rejects(client.get(first.id), (e) => e.name === "MemoryNotFoundError");
  const after = await client.history(first.id);
  assert.equal(after.at(-1).event, "DELETE");

  const gone = await client.deleteAll({ userId: user });
  assert.equal(typeof gone.message, "string");
  assert.equal((await client.getAll({ filters: { user_id: user } })).count, 0);
});

test("add with infer queues extraction; the facts become memories", { skip }, async () => {
  const client = new MemoryClient({ apiKey: agent, host });
  const user = uid();
  const res = await client.add([
    { role: "user", content: "I prefer window seats on long flights." },
    { role: "assistant", content: "Thanks, noted." },
  ], { userId: user });
  assert.equal(res.status, "PENDING");
  assert.ok(res.eventId);
  const ev = await waitFor("the extraction event", async () => {
    const r = await fetch(`${host}/v1/event/${res.eventId}/`, { headers: { Authorization: `Token ${agent}` } });
    assert.equal(r.status, 200);
    const e = await r.json();
    return e.status === "SUCCEEDED" || e.status === "FAILED" ? e : null;
  });
  assert.equal(ev.status, "SUCCEEDED");
  const all = await client.getAll({ filters: { user_id: user } });
  assert.ok(all.count >= 1, "extraction stored no memory: " + JSON.stringify(ev));
  assert.ok(all.results.some((m) => /window seats/.test(m.memory)), JSON.stringify(all.results.map((m) => m.memory)));
  await waitEmbedded();
  const found = await client.search("where should I seat them on the plane?", { filters: { user_id: user } });
  assert.ok(found.results.some((m) => /window seats/.test(m.memory)));
  // The conversation turns themselves are not memories.
  assert.ok(all.results.every((m) => m.memoryType !== "episode"));
});

test("a write waiting for approval is reported as PENDING", { skip }, async () => {
  const client = new MemoryClient({ apiKey: restricted, host });
  const res = await client.add([{ role: "user", content: "The VPN password rotates monthly" }], {
    userId: uid(), infer: false,
  });
  assert.equal(res.status, "PENDING");
  assert.equal(res.results[0].status, "PENDING");
  assert.equal(res.results[0].decision, "queued");
  assert.ok(res.results[0].approvalId);
});

test("errors arrive as the client's own exceptions", { skip }, async () => {
  const client = new MemoryClient({ apiKey: agent, host });
  await assert.rejects(client.add([{ role: "user", content: "no entity" }], { infer: false }),
    (e) => e.name === "ValidationError" && /user_id/.test(e.message));
  await assert.rejects(client.search("x", { filters: { OR: [{ user_id: "a" }] } }),
    (e) => e.name === "ValidationError" && /filters\.OR/.test(e.message));
});
