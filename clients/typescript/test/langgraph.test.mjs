// The real @langchain/langgraph running a small graph that stores and
// recalls through MemgateStore.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Annotation, StateGraph, START, END } from "@langchain/langgraph";
import { Client } from "@memgate/client";
import { MemgateStore } from "@memgate/client/langgraph";
import { url, agent, skip, uid, waitEmbedded } from "./env.mjs";

test("store operations map namespaces to scope keys", { skip }, async () => {
  const mg = new Client(url, agent);
  const store = new MemgateStore(mg);
  const user = uid();
  await store.put([user, "memories"], "food", { text: "Vegetarian, never eats meat" });
  await store.put([user, "memories"], "work", { text: "Works night shifts at the hospital" });
  await store.put([user, "settings"], "lang", { text: "French" });
  const got = await store.get([user, "memories"], "food");
  assert.deepEqual(got.value, { text: "Vegetarian, never eats meat" });
  assert.deepEqual(got.namespace, [user, "memories"]);
  assert.ok(got.createdAt instanceof Date);
  // The item is a memgate memory file scoped to the user.
  const files = await mg.listFiles({ pathPrefix: "/memories/langgraph/", scope: { user_id: user } });
  assert.deepEqual(files.map((f) => f.path).sort(), ["/memories/langgraph/memories/food", "/memories/langgraph/memories/work", "/memories/langgraph/settings/lang"]);
  await store.put([user, "memories"], "food", { text: "Vegan now" });
  assert.deepEqual((await store.get([user, "memories"], "food")).value, { text: "Vegan now" });
  const listed = await store.search([user, "memories"]);
  assert.deepEqual(listed.map((i) => i.key).sort(), ["food", "work"]);
  const filtered = await store.search([user], { filter: { text: "French" } });
  assert.deepEqual(filtered.map((i) => i.key), ["lang"]);
  const ns = await store.listNamespaces({ prefix: [user] });
  assert.deepEqual(ns, [[user, "memories"], [user, "settings"]]);
  await store.delete([user, "memories"], "work");
  assert.equal(await store.get([user, "memories"], "work"), null);
  await store.delete([user, "settings"], "lang");
  assert.deepEqual(await store.listNamespaces({ prefix: [user] }), [[user, "memories"]]);
  assert.deepEqual((await store.search([user])).map((i) => i.key), ["food"]);
});

test("a graph stores and recalls through memgate", { skip }, async () => {
  const State = Annotation.Root({
    userId: Annotation(),
    fact: Annotation(),
    question: Annotation(),
    recalled: Annotation(),
  });
  const graph = new StateGraph(State)
    .addNode("remember", async (state, config) => {
      await config.store.put([state.userId, "memories"], "fact-1", { text: state.fact });
      return {};
    })
    .addNode("recall", async (state, config) => {
      await waitEmbedded();
      const hits = await config.store.search([state.userId, "memories"], { query: state.question, limit: 1 });
      return { recalled: hits.map((h) => h.value.text) };
    })
    .addEdge(START, "remember")
    .addEdge("remember", "recall")
    .addEdge("recall", END)
    .compile({ store: new MemgateStore(new Client(url, agent)) });
  const out = await graph.invoke({ userId: uid(), fact: "The user is allergic to peanuts", question: "which foods must the user avoid?" });
  assert.deepEqual(out.recalled, ["The user is allergic to peanuts"]);
});
