"""The Python client against a real memgate serve (started by the Go test
TestPythonClient in cmd/memgate, which sets MEMGATE_URL and the tokens)."""

import json
import os
import threading
import unittest
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import memgate
from memgate import (Client, GatewayClient, Hybrid, InvalidArgument, MemoryToolHandler, NotFound,
                     PermissionDenied, Unauthenticated, VersionConflict)

URL = os.environ.get("MEMGATE_URL", "")
OPERATOR = os.environ.get("MEMGATE_OPERATOR_TOKEN", "")
AGENT = os.environ.get("MEMGATE_AGENT_TOKEN", "")
RESTRICTED = os.environ.get("MEMGATE_RESTRICTED_TOKEN", "")
GOLDEN = os.path.join(os.path.dirname(__file__), "testdata", "memory_tool_golden.json")


def needs_server(cls):
    return unittest.skipUnless(URL and OPERATOR and AGENT, "run by the Go test TestPythonClient")(cls)


def wait_embedded(mg: Client, deadline: float = 30.0) -> None:
    """Waits until every record has its vector, so a search by meaning
    sees what was just written."""
    import time
    end = time.monotonic() + deadline
    while True:
        st = mg.index_status()
        # Stored and installed in the in-memory index.
        if st["embedded"] >= st["total"] and st["vectors"] >= st["total"]:
            return
        if time.monotonic() > end:
            raise AssertionError(f"embedding did not catch up: {st}")
        time.sleep(0.05)


def uid() -> str:
    return "u-" + uuid.uuid4().hex[:10]


@needs_server
class RecordsTest(unittest.TestCase):
    def setUp(self):
        self.mg = Client(URL, AGENT)
        self.user = uid()

    def test_write_get_patch_history_forget(self):
        w = self.mg.write("preference", "Prefers window seats on long flights", scope={"user_id": self.user},
                          metadata={"topic": "travel"})
        self.assertEqual(w.decision, "accepted")
        self.assertTrue(w.citation.startswith("mem://"))
        rid = w.record.id
        r = self.mg.get(rid)
        self.assertEqual(r.content, "Prefers window seats on long flights")
        self.assertEqual(r.scope["user_id"], self.user)
        self.assertEqual(r.metadata, {"topic": "travel"})
        p = self.mg.patch(rid, r.version, content="Prefers aisle seats on long flights")
        self.assertEqual(p.record.version, 2)
        with self.assertRaises(VersionConflict) as cm:
            self.mg.patch(rid, 1, content="stale")
        self.assertEqual(cm.exception.code, "version_conflict")
        self.assertEqual(cm.exception.status, 409)
        hist = self.mg.history(rid)
        self.assertEqual([h.version for h in hist], [1, 2])
        self.assertEqual(self.mg.get(rid, version=1).content, "Prefers window seats on long flights")
        tomb = self.mg.forget(rid)
        self.assertEqual(tomb.status, "forgotten")

    def test_list_and_iterate(self):
        for text in ("The garden shed is painted green", "Invoices are due on the 5th", "The cat sleeps in the attic"):
            self.mg.write("belief", text, scope={"user_id": self.user})
        page = self.mg.list(scope={"user_id": self.user}, limit=2)
        self.assertEqual(len(page.records), 2)
        self.assertTrue(page.next_cursor)
        got = list(self.mg.records(scope={"user_id": self.user}, limit=2))
        self.assertEqual(len(got), 3)

    def test_search_by_meaning_with_explain(self):
        self.mg.write("preference", "Alice is vegetarian and never eats meat", scope={"user_id": self.user})
        self.mg.write("belief", "The office printer is on the third floor", scope={"user_id": self.user})
        wait_embedded(self.mg)
        res = self.mg.search("what food should I order for her?", scope={"user_id": self.user}, k=2, explain=True)
        self.assertTrue(res.results)
        self.assertIn("vegetarian", res.results[0].record.content)
        self.assertIsNotNone(res.results[0].explain)
        self.assertIn("dense", res.signals)

    def test_context(self):
        self.mg.write("preference", "Bob wants answers in French", scope={"user_id": self.user})
        wait_embedded(self.mg)
        env = self.mg.context("reply to Bob", scope={"user_id": self.user}, budget_tokens=500)
        self.assertIn("markdown", env)
        self.assertIn("French", env["markdown"])

    def test_procedure_outcome_and_restore(self):
        w = self.mg.write("skill", "To rotate the API key: open settings, click rotate, update the vault",
                          scope={"user_id": self.user})
        res = self.mg.record_outcome(w.record.id, 1)
        self.assertIsInstance(res, dict)
        self.assertEqual(Client(URL, OPERATOR).restore(w.record.id).status, "active")
        with self.assertRaises(PermissionDenied):
            self.mg.restore(w.record.id)  # operators only

    def test_whoami(self):
        me = self.mg.whoami()
        self.assertEqual(me.name, "app")
        self.assertEqual(me.kind, "agent")

    def test_events(self):
        sess = "s-" + uuid.uuid4().hex[:8]
        self.mg.append_event(sess, "note", "started the migration")
        evs = self.mg.list_events(sess)
        self.assertEqual(len(evs.records), 1)


@needs_server
class ErrorsTest(unittest.TestCase):
    def test_error_mapping(self):
        mg = Client(URL, AGENT)
        with self.assertRaises(InvalidArgument) as cm:
            mg.write("no-such-type", "x")
        self.assertEqual(cm.exception.field, "type")
        self.assertEqual(cm.exception.status, 400)
        with self.assertRaises(NotFound):
            mg.get("01JD7Z5Q3X0M8K2N4P6R8T0V2W")
        with self.assertRaises(PermissionDenied) as cm:
            mg.list_approvals()
        self.assertEqual(cm.exception.code, "permission_denied")
        with self.assertRaises(Unauthenticated):
            Client(URL, "mg_bad_token").whoami()

    def test_token_never_in_repr_or_errors(self):
        mg = Client(URL, AGENT)
        self.assertNotIn(AGENT, repr(mg))
        try:
            mg.get("01JD7Z5Q3X0M8K2N4P6R8T0V2W")
        except NotFound as e:
            self.assertNotIn(AGENT, str(e))

    def test_unreachable_is_transport_error(self):
        mg = Client("http://127.0.0.1:9", AGENT, timeout=2, retries=0)
        with self.assertRaises(memgate.TransportError):
            mg.whoami()


class _Flaky(BaseHTTPRequestHandler):
    calls = []

    def _answer(self):
        _Flaky.calls.append(self.command)
        n = len(_Flaky.calls)
        if n == 1:
            self.send_response(503)
            self.send_header("Retry-After", "0")
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error":{"code":"unavailable","message":"busy","details":{}}}')
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"id":"p1","name":"x","kind":"agent","workspace":"default"}')

    do_GET = _answer

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        _Flaky.calls.append(self.command)
        self.send_response(503)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"error":{"code":"unavailable","message":"busy","details":{}}}')

    def log_message(self, *a):
        pass


class RetryTest(unittest.TestCase):
    def setUp(self):
        _Flaky.calls = []
        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]

    def tearDown(self):
        self.srv.shutdown()
        self.srv.server_close()

    def test_get_is_retried(self):
        me = Client(self.url, "t").whoami()
        self.assertEqual(me.id, "p1")
        self.assertEqual(_Flaky.calls, ["GET", "GET"])

    def test_write_is_sent_once(self):
        with self.assertRaises(memgate.Unavailable):
            Client(self.url, "t").write("belief", "x")
        self.assertEqual(_Flaky.calls, ["POST"])


@needs_server
class ApprovalsTest(unittest.TestCase):
    def test_queue_approve_reject(self):
        intern = Client(URL, RESTRICTED)
        op = Client(URL, OPERATOR)
        user = uid()
        w1 = intern.write("belief", "The staging database moved to host db-7", scope={"user_id": user})
        w2 = intern.write("belief", "The deploy freeze starts on Friday", scope={"user_id": user})
        self.assertEqual(w1.decision, "queued")
        self.assertTrue(w1.approval_id)
        page = op.list_approvals(status="pending")
        ids = [i["approval"]["id"] if "approval" in i else i.get("id") for i in page["items"]]
        self.assertIn(w1.approval_id, ids)
        op.approve(w1.approval_id)
        op.reject(w2.approval_id, reason="not verified")
        self.assertEqual(op.get(w1.record.id).status, "active")
        agents = {a["name"] for a in op.list_agents()}
        self.assertTrue({"app", "intern"} <= agents)


@needs_server
class FilesTest(unittest.TestCase):
    def test_file_crud(self):
        mg = Client(URL, AGENT)
        p = "/memories/" + uuid.uuid4().hex[:8] + "/notes.md"
        res = mg.create_file(p, "# Notes\nfirst\n")
        fid = res["file"]["id"]
        self.assertEqual([f["path"] for f in mg.list_files(path=p)], [p])
        self.assertEqual(mg.get_file(fid)["content"], "# Notes\nfirst\n")
        mg.update_file(fid, content="# Notes\nsecond\n")
        self.assertEqual(len(mg.file_history(fid)), 2)
        mg.delete_file(fid)
        self.assertEqual(mg.list_files(path=p), [])


@needs_server
class KnowledgeTest(unittest.TestCase):
    def test_ingest_search_cite_forget(self):
        mg = Client(URL, AGENT)
        scope = {"project_id": "kn-" + uuid.uuid4().hex[:8]}
        doc = "# Runbook\n\nGeneral notes.\n\n## Rotating the pager\n\nThe pager rotates every Tuesday at noon.\n"
        res = mg.ingest("https://wiki.example/runbook.md", doc, scope=scope)
        self.assertEqual(res["outcome"], "created")
        self.assertEqual(mg.ingest("https://wiki.example/runbook.md", doc, scope=scope)["outcome"], "unchanged")
        self.assertIn(res["resource_id"], [r["resource_id"] for r in mg.resources()])
        hits = mg.search_resources("when does the pager rotate", scope=scope)["results"]
        self.assertTrue(hits)
        top = hits[0]
        self.assertTrue(top["citation"].startswith("res://"))
        src = mg.source(top["resource_id"], f'{top["line_start"]}-{top["line_end"]}')
        self.assertIn("every Tuesday at noon", src["text"])
        self.assertEqual(mg.forget_resource(res["resource_id"])["forgotten_chunks"], len(res["chunks"]))
        with self.assertRaises(NotFound):
            mg.source(res["resource_id"])
        with self.assertRaises(ValueError):
            mg.ingest("x.md")


@needs_server
class MemoryToolTest(unittest.TestCase):
    """A golden transcript: the tool_result of each call of a Claude
    session using the memory tool. UPDATE_GOLDEN=1 rewrites it."""

    def test_golden_transcript(self):
        h = MemoryToolHandler(Client(URL, AGENT), scope={"user_id": uid()})
        calls = [
            {"command": "view", "path": "/memories"},
            {"command": "create", "path": "/memories/prefs.md", "file_text": "likes tea\n"},
            {"command": "view", "path": "/memories/prefs.md"},
            {"command": "str_replace", "path": "/memories/prefs.md", "old_str": "tea", "new_str": "green tea"},
            {"command": "insert", "path": "/memories/prefs.md", "insert_line": 1, "insert_text": "hates coffee\n"},
            {"command": "view", "path": "/memories/prefs.md"},
            {"command": "rename", "old_path": "/memories/prefs.md", "new_path": "/memories/taste.md"},
            {"command": "view", "path": "/memories/prefs.md"},
            {"command": "delete", "path": "/memories/taste.md"},
            {"command": "view", "path": "/memories"},
        ]
        transcript = []
        for i, c in enumerate(calls):
            block = {"type": "tool_use", "id": f"toolu_{i:02d}", "name": "memory", "input": c}
            out = h(block)
            self.assertEqual(out["tool_use_id"], f"toolu_{i:02d}")
            transcript.append({"input": c, "result": out})
        if os.environ.get("UPDATE_GOLDEN") == "1":
            with open(GOLDEN, "w") as f:
                json.dump(transcript, f, indent=2)
                f.write("\n")
        with open(GOLDEN) as f:
            want = json.load(f)
        self.assertEqual(transcript, want)

    def test_not_memory(self):
        h = MemoryToolHandler(Client(URL, AGENT))
        with self.assertRaises(ValueError):
            h.handle({"type": "tool_use", "id": "x", "name": "bash", "input": {}})


@needs_server
class GatewayTest(unittest.TestCase):
    def setUp(self):
        u = Client(URL, OPERATOR).create_user(uid())
        self.gw = GatewayClient(URL, u["user_id"], u["user_key"])
        self.key = u["user_key"]

    def test_persist_then_recall(self):
        events = []
        h = Hybrid(self.gw, sink=events.append)
        conv = uuid.uuid4().hex[:8]
        h.persist_after_run(conv, "My cat is called Miso", "Nice name for a cat!")
        self.assertEqual([e.name for e in events], ["memory_gateway_add_succeeded", "memory_gateway_flush_succeeded"])
        self.assertTrue(events[1].job_id)
        items = h.recall_before_run(conv, "what is my cat called?")
        self.assertTrue(any("Miso" in i.text for i in items))
        self.assertTrue(all(i.untrusted for i in items))
        for e in events:
            self.assertNotIn(self.key, repr(e))

    def test_failures_never_raise(self):
        events = []
        bad = GatewayClient(URL, "nobody", "mgu_wrong")
        h = Hybrid(bad, sink=events.append)
        self.assertEqual(h.recall_before_run("c", "q"), [])
        h.persist_after_run("c", "p", "a")
        self.assertEqual([(e.name, e.category) for e in events],
                         [("memory_gateway_recall_failed", "auth"), ("memory_gateway_add_failed", "auth")])
        events.clear()
        h.persist_after_run("", "p", "a")
        self.assertEqual(events[0].category, "invalid_input")


if __name__ == "__main__":
    unittest.main()
