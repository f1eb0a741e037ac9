// Compiled (not run) by types.test.mjs: the declarations in types/ must
// type-check against this use of every entry point.
import { Client, GatewayClient, Hybrid, NotFound, type WriteResult } from "@memgate/client";
import { memgateMemoryTool } from "@memgate/client/anthropic";
import { MemgateStore } from "@memgate/client/langgraph";

export async function use(): Promise<void> {
  const mg = new Client("http://127.0.0.1:8080", "mg_x");
  const w: WriteResult = await mg.write({ type: "preference", content: "likes tea", scope: { user_id: "alice" } });
  const hits = await mg.search("tea", { scope: { user_id: "alice" }, k: 3, explain: true });
  const first: string = hits.results[0].record.content;
  try { await mg.get(w.record.id); } catch (e) { if (e instanceof NotFound) console.log(e.code, e.field, first); }
  const tool = memgateMemoryTool(mg, { scope: { user_id: "alice" } });
  console.log(tool.name);
  const store = new MemgateStore(mg);
  await store.put(["alice", "memories"], "k", { text: "likes tea" });
  const item = await store.get(["alice", "memories"], "k");
  console.log(item?.value);
  const h = new Hybrid(new GatewayClient("http://x", "u", "k"), { sink: (e) => console.log(e.name) });
  await h.persistAfterRun("c", "p", "a");
}
