// The real @anthropic-ai/sdk tool runner with memgate's memory tool,
// against a fake Messages API (a node http server scripted as Claude).
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import Anthropic from "@anthropic-ai/sdk";
import { Client } from "@memgate/client";
import { memgateMemoryTool } from "@memgate/client/anthropic";
import { url, agent, skip, uid } from "./env.mjs";

// Claude's side: each turn answers the previous tool_result.
const script = [
  { type: "tool_use", id: "toolu_01", name: "memory", input: { command: "view", path: "/memories" } },
  { type: "tool_use", id: "toolu_02", name: "memory", input: { command: "create", path: "/memories/prefs.md", file_text: "likes green tea\n" } },
  { type: "tool_use", id: "toolu_03", name: "memory", input: { command: "view", path: "/memories/missing.md" } },
  { type: "text", text: "Noted: you like green tea." },
];

function fakeMessagesAPI() {
  const requests = [];
  const srv = http.createServer(async (req, res) => {
    let body = "";
    for await (const c of req) body += c;
    const parsed = JSON.parse(body);
    requests.push({ path: req.url, headers: req.headers, body: parsed });
    const block = script[requests.length - 1];
    res.setHeader("Content-Type", "application/json");
    res.end(JSON.stringify({
      id: `msg_${requests.length}`, type: "message", role: "assistant", model: parsed.model,
      content: [block], stop_reason: block.type === "tool_use" ? "tool_use" : "end_turn", stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 5 },
    }));
  });
  return { srv, requests };
}

test("the SDK's tool runner runs Claude's memory tool in memgate", { skip }, async () => {
  const { srv, requests } = fakeMessagesAPI();
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  try {
    const mg = new Client(url, agent);
    const scope = { user_id: uid() };
    const anthropic = new Anthropic({ apiKey: "test-key", baseURL: `http://127.0.0.1:${srv.address().port}`, maxRetries: 0 });
    const final = await anthropic.beta.messages.toolRunner({
      model: "claude-sonnet-4-5", max_tokens: 1024,
      messages: [{ role: "user", content: "Remember that I like green tea." }],
      tools: [memgateMemoryTool(mg, { scope })],
    });
    assert.equal(final.content[0].text, "Noted: you like green tea.");
    assert.equal(requests.length, 4);
    assert.deepEqual(requests[0].body.tools, [{ type: "memory_20250818", name: "memory" }]);
    const results = requests.slice(1).map((r) => r.body.messages.at(-1).content[0]);
    assert.equal(results[0].tool_use_id, "toolu_01");
    assert.match(JSON.stringify(results[0].content), /directories up to 2 levels deep in \/memories/);
    assert.equal(results[1].tool_use_id, "toolu_02");
    assert.match(JSON.stringify(results[1].content), /File created successfully at: \/memories\/prefs.md/);
    assert.ok(!results[1].is_error);
    assert.equal(results[2].tool_use_id, "toolu_03");
    assert.equal(results[2].is_error, true);
    assert.match(JSON.stringify(results[2].content), /does not exist/);
    // The file is in memgate, in the user's scope, versioned and gated.
    const files = await mg.listFiles({ path: "/memories/prefs.md", scope });
    assert.equal(files.length, 1);
    assert.equal(files[0].content, "likes green tea\n");
  } finally {
    srv.close();
  }
});
