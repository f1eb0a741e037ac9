"""The Memory Gateway client and the recall/persist helper for chat
runtimes, with the Go SDK's failure rules: recall never fails the run,
persist sends exactly one add (never retried) and flushes only if the add
succeeded, and every outcome is an Event with sanitized metadata."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from ._transport import Transport, clean, need
from .errors import BadResponse, MemgateError, TransportError
from .types import Event, ReferenceItem

SCOPE_CURRENT_CHAT = "current_chat"
SCOPE_RESOURCES = "resources"
SCOPE_ALL_USER_MEMORY = "all_user_memory"
DEFAULT_SCOPES = (SCOPE_CURRENT_CHAT, SCOPE_ALL_USER_MEMORY)
DEFAULT_ASSISTANT_SENDER_ID = "assistant"

EVENT_RECALL_SUCCEEDED = "memory_gateway_recall_succeeded"
EVENT_RECALL_FAILED = "memory_gateway_recall_failed"
EVENT_ADD_SUCCEEDED = "memory_gateway_add_succeeded"
EVENT_ADD_FAILED = "memory_gateway_add_failed"
EVENT_FLUSH_SUCCEEDED = "memory_gateway_flush_succeeded"
EVENT_FLUSH_FAILED = "memory_gateway_flush_failed"


def session_id(conversation_id: str) -> str:
    """The gateway session of a conversation."""
    return "chat:" + conversation_id


class GatewayClient:
    """POST /memories/*: the user's id and key travel in each body. No
    request is retried (an add is not idempotent)."""

    def __init__(self, base_url: str, user_id: str, user_key: str, *, app_id: Optional[str] = None,
                 project_id: Optional[str] = None, timeout: float = 10.0) -> None:
        if not user_id or not user_key:
            raise ValueError("user_id and user_key are required")
        self._t = Transport(base_url, timeout=timeout, retries=0)
        self._id = {"user_id": user_id, "user_key": user_key}
        self._group = clean({"app_id": app_id, "project_id": project_id})

    def __repr__(self) -> str:  # never the key or the user id
        return f"memgate.GatewayClient({self._t.base!r})"

    def _post(self, path: str, body: Dict[str, Any]) -> Any:
        return self._t.request("POST", path, body={**self._id, **self._group, **clean(body)})

    def search(self, query: str, *, conversation_id: Optional[str] = None, scope: Optional[Sequence[str]] = None,
               top_k: Optional[int] = None, min_relevance: Optional[float] = None) -> List[Dict[str, Any]]:
        d = self._post("/memories/search", {"query": query, "conversation_id": conversation_id,
                                            "scope": list(scope) if scope else None, "top_k": top_k,
                                            "min_relevance": min_relevance})
        res = need(d, "results", "gateway search")
        if not isinstance(res, list):
            raise BadResponse("gateway search: results is not a list")
        return res

    def add(self, session: str, messages: List[Dict[str, Any]]) -> Dict[str, Any]:
        return self._post("/memories/add", {"session_id": session, "messages": messages})

    def flush(self, session: str) -> Dict[str, Any]:
        d = self._post("/memories/flush", {"session_id": session})
        need(d, "job_id", "flush")
        return d

    def job(self, job_id: str) -> Dict[str, Any]:
        return self._post("/memories/jobs/get", {"job_id": job_id})

    def update(self, memory_id: str, text: str) -> Dict[str, Any]:
        return self._post("/memories/update", {"memory_id": memory_id, "text": text})

    def delete(self, memory_id: str) -> Dict[str, Any]:
        return self._post("/memories/delete", {"memory_id": memory_id})


def _classify(err: Exception) -> tuple:
    if isinstance(err, TransportError):
        return ("timeout" if "timeout" in str(err).lower() else "network", 0)
    if isinstance(err, BadResponse):
        return ("bad_response", err.status)
    if isinstance(err, MemgateError):
        st = err.status
        if st in (401, 403):
            return ("auth", st)
        if st == 429:
            return ("rate_limited", st)
        if st >= 500:
            return ("server", st)
        return ("rejected", st)
    return ("internal", 0)


class Hybrid:
    """Recall before a model run and persist after it, for runtimes that
    keep their own memory too. Neither method raises."""

    def __init__(self, gateway: GatewayClient, *, scopes: Sequence[str] = DEFAULT_SCOPES, top_k: int = 8,
                 sink: Optional[Callable[[Event], None]] = None, user_sender_id: str = "user") -> None:
        if not scopes or any(s not in (SCOPE_CURRENT_CHAT, SCOPE_RESOURCES, SCOPE_ALL_USER_MEMORY) for s in scopes):
            raise ValueError("scopes must be a non-empty subset of current_chat, resources, all_user_memory")
        if not 1 <= top_k <= 100:
            raise ValueError("top_k must be between 1 and 100")
        self._gw = gateway
        self._scopes = list(scopes)
        self._top_k = top_k
        self._sink = sink
        self._user_sender = user_sender_id
        self._last_ms = 0
        self._mu = threading.Lock()
        self.now: Callable[[], float] = time.time

    def _emit(self, e: Event) -> None:
        if self._sink is not None:
            try:
                self._sink(e)
            except Exception:  # a sink never breaks the run
                pass

    def recall_before_run(self, conversation_id: str, query: str) -> List[ReferenceItem]:
        """At most top_k reference items (raw payloads dropped, untrusted);
        [] on any failure, reported as an event."""
        if not conversation_id.strip() or not query.strip():
            self._emit(Event(EVENT_RECALL_FAILED, "search", category="invalid_input"))
            return []
        start = time.monotonic()
        try:
            res = self._gw.search(query, conversation_id=conversation_id, scope=self._scopes, top_k=self._top_k)
            items = [ReferenceItem(id=str(r["id"]), session_id=str(r.get("session_id") or ""), text=str(r["text"]),
                                   score=float(r.get("score") or 0), source_scope=str(r.get("source_scope") or ""),
                                   resource_uri=str(r.get("resource_uri") or ""))
                     for r in res[: self._top_k]]
        except Exception as e:  # noqa: BLE001 - recall never fails the run
            if isinstance(e, (KeyError, TypeError, ValueError)):
                cat, st = "bad_response", 0
            else:
                cat, st = _classify(e)
            self._emit(Event(EVENT_RECALL_FAILED, "search", category=cat, status=st, duration=time.monotonic() - start))
            return []
        self._emit(Event(EVENT_RECALL_SUCCEEDED, "search", status=200, results=len(items), duration=time.monotonic() - start))
        return items

    def _timestamps(self) -> tuple:
        with self._mu:
            out = []
            for _ in range(2):
                ms = int(self.now() * 1000)
                if ms <= self._last_ms:
                    ms = self._last_ms + 1
                ms = max(ms, 1)
                self._last_ms = ms
                out.append(ms)
            return out[0], out[1]

    def persist_after_run(self, conversation_id: str, user_prompt: str, final_answer: str) -> None:
        """One add (prompt then answer, strictly increasing timestamps),
        then one flush only if the add succeeded. Nothing is retried."""
        if not conversation_id.strip() or not user_prompt.strip() or not final_answer.strip():
            self._emit(Event(EVENT_ADD_FAILED, "add", category="invalid_input"))
            return
        u, a = self._timestamps()
        msgs = [{"sender_id": self._user_sender, "role": "user", "timestamp": u, "content": user_prompt},
                {"sender_id": DEFAULT_ASSISTANT_SENDER_ID, "role": "assistant", "timestamp": a, "content": final_answer}]
        session = session_id(conversation_id)
        start = time.monotonic()
        try:
            self._gw.add(session, msgs)
        except Exception as e:  # noqa: BLE001
            cat, st = _classify(e)
            self._emit(Event(EVENT_ADD_FAILED, "add", category=cat, status=st, messages=2, duration=time.monotonic() - start))
            return
        self._emit(Event(EVENT_ADD_SUCCEEDED, "add", status=200, messages=2, duration=time.monotonic() - start))
        start = time.monotonic()
        try:
            fr = self._gw.flush(session)
        except Exception as e:  # noqa: BLE001
            cat, st = _classify(e)
            self._emit(Event(EVENT_FLUSH_FAILED, "flush", category=cat, status=st, duration=time.monotonic() - start))
            return
        self._emit(Event(EVENT_FLUSH_SUCCEEDED, "flush", status=202, job_id=str(fr.get("job_id") or ""),
                         duration=time.monotonic() - start))
