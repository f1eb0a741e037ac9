// The server the Go test TestTypeScriptClient (cmd/memgate) started.
import { randomUUID } from "node:crypto";

export const url = process.env.MEMGATE_URL;
export const operator = process.env.MEMGATE_OPERATOR_TOKEN;
export const agent = process.env.MEMGATE_AGENT_TOKEN;
export const restricted = process.env.MEMGATE_RESTRICTED_TOKEN;
export const skip = !url || !agent ? "run by the Go test TestTypeScriptClient" : false;
export const uid = () => "u-" + randomUUID().slice(0, 8);

// waitEmbedded waits until every record has its vector, so a search by
// meaning sees what was just written.
export async function waitEmbedded(token = agent, ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    const r = await fetch(`${url}/v1/index`, { headers: { Authorization: `Bearer ${token}` } });
    const st = await r.json();
    if (st.embedded >= st.total && st.vectors >= st.total) return; // stored and in the index
    if (Date.now() > end) throw new Error("embedding did not catch up: " + JSON.stringify(st));
    await new Promise((res) => setTimeout(res, 50));
  }
}
