"""The REST v1 client: records, search, context, memory files and the
memory tool, approvals and agents (for operators)."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any, Dict, Iterator, List, Mapping, Optional, Union

from ._transport import Transport, clean, need
from .types import ListResult, Principal, Record, Scope, SearchResponse, ToolResult, WriteResult

ScopeLike = Union[Scope, Mapping[str, str], None]


def _scope(s: ScopeLike) -> Dict[str, str]:
    if s is None:
        return {}
    if isinstance(s, Scope):
        return s.to_json()
    return {k: v for k, v in dict(s).items() if v}


def _seg(v: str) -> str:
    if not v:
        raise ValueError("id must not be empty")
    return urllib.parse.quote(v, safe="")


class Client:
    """A memgate REST client acting as one principal (agent or operator).

    Only idempotent requests (GET, PUT, DELETE) are retried, on connection
    failures and 429/502/503/504; a write is sent once.
    """

    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0, retries: int = 2) -> None:
        if not token:
            raise ValueError("token is required")
        self._t = Transport(base_url, timeout=timeout, retries=retries,
                            headers={"Authorization": "Bearer " + token})

    def __repr__(self) -> str:  # never the token
        return f"memgate.Client({self._t.base!r})"

    def request(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None, body: Any = None) -> Any:
        """Any REST call, for routes this client has no method for."""
        return self._t.request(method, path, query=query, body=body)

    # --- principal -----------------------------------------------------
    def whoami(self) -> Principal:
        return Principal.from_json(self._t.request("GET", "/v1/whoami"))

    # --- records -------------------------------------------------------
    def write(self, type: str, content: str, *, scope: ScopeLike = None, category: Optional[str] = None,
              metadata: Optional[Mapping[str, Any]] = None, entities: Optional[List[str]] = None,
              source: Optional[Mapping[str, Any]] = None, access: Optional[str] = None,
              classification: Optional[str] = None, valid_from: Optional[str] = None,
              valid_until: Optional[str] = None, status: Optional[str] = None,
              supersedes: Optional[str] = None) -> WriteResult:
        """Proposes a record to the gate; the result's decision says what
        happened (accepted, provisional, queued, quarantined, duplicate)."""
        body = clean({"type": type, "content": content, "scope": _scope(scope), "category": category,
                      "metadata": dict(metadata) if metadata is not None else None, "entities": entities,
                      "source": dict(source) if source else None, "access": access,
                      "classification": classification, "valid_from": valid_from, "valid_until": valid_until,
                      "status": status, "supersedes": supersedes})
        return WriteResult.from_json(self._t.request("POST", "/v1/records", body=body))

    def get(self, id: str, *, version: Optional[int] = None, known_at: Optional[str] = None,
            include_sensitive: bool = False) -> Record:
        d = self._t.request("GET", "/v1/records/" + _seg(id), query={
            "version": version, "known_at": known_at, "include_sensitive": include_sensitive or None})
        return Record.from_json(d)

    def patch(self, id: str, expected_version: int, **changes: Any) -> WriteResult:
        """Writes a new version. changes: content, category, metadata,
        entities, confidence, valid_from, valid_until, access,
        classification, invalidate."""
        body = {"expected_version": expected_version, **changes}
        return WriteResult.from_json(self._t.request("PATCH", "/v1/records/" + _seg(id), body=body))

    def forget(self, id: str) -> Record:
        """Forgets a record; its tombstone is returned."""
        d = self._t.request("DELETE", "/v1/records/" + _seg(id))
        return Record.from_json(need(d, "record", "forget"))

    def history(self, id: str, *, include_sensitive: bool = False) -> List[Record]:
        d = self._t.request("GET", "/v1/records/" + _seg(id) + "/history",
                            query={"include_sensitive": include_sensitive or None})
        vs = need(d, "versions", "history") if isinstance(d, dict) else d
        return [Record.from_json(v) for v in vs]

    def list(self, *, type: Optional[str] = None, status: Optional[str] = None, category: Optional[str] = None,
             entity: Optional[str] = None, scope: ScopeLike = None, as_of: Optional[str] = None,
             known_at: Optional[str] = None, limit: Optional[int] = None, cursor: Optional[str] = None,
             include_sensitive: bool = False, include_invalidated: bool = False) -> ListResult:
        q: Dict[str, Any] = {"type": type, "status": status, "category": category, "entity": entity,
                             "as_of": as_of, "known_at": known_at, "limit": limit, "cursor": cursor,
                             "include_sensitive": include_sensitive or None,
                             "include_invalidated": include_invalidated or None, **_scope(scope)}
        return ListResult.from_json(self._t.request("GET", "/v1/records", query=q))

    def records(self, **filters: Any) -> Iterator[Record]:
        """Every record list() selects, page after page."""
        cursor = None
        while True:
            page = self.list(cursor=cursor, **filters)
            yield from page.records
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def record_outcome(self, id: str, outcome: float) -> Dict[str, Any]:
        """Reports how following a procedure (a skill record) went: 1
        success, 0 failure, or a value between."""
        return self._t.request("POST", "/v1/records/" + _seg(id) + "/outcome", body={"outcome": outcome})

    def restore(self, id: str) -> Record:
        """Restores an archived record (operators); the active record."""
        d = self._t.request("POST", "/v1/records/" + _seg(id) + "/restore")
        return Record.from_json(need(d, "record", "restore"))

    # --- search and context -------------------------------------------
    def search(self, query: str, *, k: Optional[int] = None, scope: ScopeLike = None, explain: bool = False,
               types: Optional[List[str]] = None, min_relevance: Optional[float] = None,
               **options: Any) -> SearchResponse:
        """Hybrid search by meaning and words; explain=True adds each hit's
        per-signal scores."""
        body = clean({"query": query, "k": k, "scope": _scope(scope), "explain": explain or None,
                      "types": types, "min_relevance": min_relevance, **options})
        return SearchResponse.from_json(self._t.request("POST", "/v1/search", body=body))

    def index_status(self) -> Dict[str, Any]:
        """Search index sizes and embedding progress (embedded of total)."""
        return self._t.request("GET", "/v1/index")

    def context(self, query: str, *, scope: ScopeLike = None, budget_tokens: Optional[int] = None,
                **limits: Any) -> Dict[str, Any]:
        """One bounded, sectioned context for a task (POST /v1/context)."""
        body = clean({"query": query, "scope": _scope(scope), "budget_tokens": budget_tokens, **limits})
        d = self._t.request("POST", "/v1/context", body=body)
        need(d, "sections", "context")
        return d

    # --- knowledge: documents as cited resource chunks ---------------------
    def ingest(self, uri: str, content: Optional[str] = None, *, content_bytes: Optional[bytes] = None,
               media_type: Optional[str] = None, scope: ScopeLike = None,
               access: Optional[str] = None) -> Dict[str, Any]:
        """Ingests one document (text, or bytes such as a PDF) through the
        gate: POST /v1/resources. A changed document gets new versions of
        its changed chunks only; an unchanged one writes nothing
        (outcome "unchanged")."""
        if (content is None) == (content_bytes is None):
            raise ValueError("give content or content_bytes")
        body = clean({"uri": uri, "media_type": media_type, "scope": _scope(scope), "access": access})
        if content_bytes is not None:
            import base64
            body["content_base64"] = base64.b64encode(content_bytes).decode("ascii")
        else:
            body["content"] = content
        d = self._t.request("POST", "/v1/resources", body=body)
        need(d, "resource_id", "ingest")
        return d

    def resources(self) -> List[Dict[str, Any]]:
        """The ingested documents this principal can read."""
        return need(self._t.request("GET", "/v1/resources"), "resources", "resources")

    def search_resources(self, query: str, *, k: Optional[int] = None, scope: ScopeLike = None,
                         group_by_document: bool = False, rerank: Optional[bool] = None,
                         explain: bool = False) -> Dict[str, Any]:
        """Searches ingested documents; each hit cites res://...#L<a>-L<b>."""
        body = clean({"query": query, "k": k, "scope": _scope(scope), "group_by_document": group_by_document or None,
                      "rerank": rerank, "explain": explain or None})
        d = self._t.request("POST", "/v1/resources/search", body=body)
        need(d, "results", "search_resources")
        return d

    def source(self, resource_id: str, lines: Optional[str] = None) -> Dict[str, Any]:
        """The cited lines ("a-b"; None for all) of the indexed version."""
        return self._t.request("GET", "/v1/resources/" + _seg(resource_id) + "/source",
                               query=clean({"lines": lines}))

    def forget_resource(self, resource_id: str) -> Dict[str, Any]:
        """Erases a document: every chunk, version, vector and index entry."""
        return self._t.request("DELETE", "/v1/resources/" + _seg(resource_id))

    # --- session events ------------------------------------------------
    def append_event(self, session_id: str, kind: str, content: str, **fields: Any) -> WriteResult:
        body = {"kind": kind, "content": content, **fields}
        return WriteResult.from_json(self._t.request("POST", "/v1/sessions/" + _seg(session_id) + "/events", body=body))

    def list_events(self, session_id: str, *, cursor: Optional[str] = None, limit: Optional[int] = None) -> ListResult:
        return ListResult.from_json(self._t.request("GET", "/v1/sessions/" + _seg(session_id) + "/events",
                                                    query={"cursor": cursor, "limit": limit}))

    # --- memory files and the memory tool -------------------------------
    def create_file(self, path: str, content: str, *, scope: ScopeLike = None, pinned: bool = False,
                    access: Optional[str] = None) -> Dict[str, Any]:
        body = clean({"path": path, "content": content, "scope": _scope(scope) or None,
                      "pinned": pinned or None, "access": access})
        return self._t.request("POST", "/v1/files", body=body)

    def list_files(self, *, path_prefix: Optional[str] = None, path: Optional[str] = None,
                   pinned: Optional[bool] = None, scope: ScopeLike = None) -> List[Dict[str, Any]]:
        d = self._t.request("GET", "/v1/files", query={"path_prefix": path_prefix, "path": path,
                                                       "pinned": pinned, **_scope(scope)})
        return list(need(d, "files", "list files"))

    def get_file(self, id: str, *, version: Optional[int] = None) -> Dict[str, Any]:
        d = self._t.request("GET", "/v1/files/" + _seg(id), query={"version": version})
        return need(d, "file", "get file")

    def update_file(self, id: str, *, content: Optional[str] = None, pinned: Optional[bool] = None,
                    path: Optional[str] = None, expected_content_sha256: Optional[str] = None) -> Dict[str, Any]:
        body = clean({"content": content, "pinned": pinned, "path": path,
                      "expected_content_sha256": expected_content_sha256})
        return self._t.request("PATCH", "/v1/files/" + _seg(id), body=body)

    def delete_file(self, id: str, *, expected_content_sha256: Optional[str] = None) -> Dict[str, Any]:
        return self._t.request("DELETE", "/v1/files/" + _seg(id),
                               query={"expected_content_sha256": expected_content_sha256})

    def file_history(self, id: str) -> List[Dict[str, Any]]:
        d = self._t.request("GET", "/v1/files/" + _seg(id) + "/history")
        return list(need(d, "versions", "file history"))

    def memory_tool(self, tool_use: Mapping[str, Any], *, scope: ScopeLike = None) -> ToolResult:
        """Runs one call of Claude's memory tool. tool_use is a tool_use
        block ({"type": "tool_use", "id", "name": "memory", "input"}) or
        the input object itself. A failed command is a result with
        is_error set, not an exception."""
        d = self._t.request("POST", "/v1/memory-tool", query=_scope(scope), body=dict(tool_use))
        res = ToolResult.from_json(d)
        if tool_use.get("type") == "tool_use":
            res.tool_use_id = str(tool_use.get("id") or "")
        return res

    # --- operators: approvals and agents --------------------------------
    def list_approvals(self, *, status: Optional[str] = None, cursor: Optional[str] = None,
                       limit: Optional[int] = None) -> Dict[str, Any]:
        d = self._t.request("GET", "/v1/approvals", query={"status": status, "cursor": cursor, "limit": limit})
        need(d, "items", "approvals")
        return d

    def approve(self, id: str, **edit: Any) -> Dict[str, Any]:
        """Approves a queued item, optionally editing it first (content,
        category, entities, access, classification)."""
        return self._t.request("POST", "/v1/approvals/" + _seg(id) + "/approve", body=edit or None)

    def reject(self, id: str, reason: Optional[str] = None) -> Dict[str, Any]:
        return self._t.request("POST", "/v1/approvals/" + _seg(id) + "/reject", body=clean({"reason": reason}) or None)

    def create_agent(self, name: str, trust: Optional[str] = None) -> Dict[str, Any]:
        """Creates an agent; its token is in the answer, shown once."""
        return self._t.request("POST", "/v1/agents", body=clean({"name": name, "trust": trust}))

    def list_agents(self) -> List[Dict[str, Any]]:
        return list(need(self._t.request("GET", "/v1/agents"), "agents", "agents"))

    def revoke_agent(self, id_or_name: str) -> Dict[str, Any]:
        return self._t.request("DELETE", "/v1/agents/" + _seg(id_or_name))

    def rotate_agent(self, id_or_name: str) -> Dict[str, Any]:
        return self._t.request("POST", "/v1/agents/" + _seg(id_or_name) + "/rotate")

    def create_user(self, user_id: Optional[str] = None) -> Dict[str, str]:
        """Creates a gateway user; its key is shown once."""
        d = self._t.request("POST", "/users", body=clean({"user_id": user_id}))
        need(d, "user_key", "create user")
        return d

    def job(self, id: str) -> Dict[str, Any]:
        return self._t.request("GET", "/v1/jobs/" + _seg(id))

    def audit(self, *, after: Optional[int] = None, limit: Optional[int] = None) -> Dict[str, Any]:
        return self._t.request("GET", "/v1/audit", query={"after": after, "limit": limit})

    def verify_audit(self) -> Dict[str, Any]:
        return self._t.request("GET", "/v1/audit/verify")

    def decisions(self, **filters: Any) -> Dict[str, Any]:
        return self._t.request("GET", "/v1/decisions", query=filters)


def dumps(v: Any) -> str:
    """JSON for logs and tests, with dataclasses' raw objects."""
    return json.dumps(getattr(v, "raw", v), sort_keys=True)
