"""Typed views of memgate's JSON. Each keeps the whole object in ``raw``
so fields added by newer servers are never lost."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Type, TypeVar

T = TypeVar("T")


def _build(cls: Type[T], d: Any) -> T:
    if not isinstance(d, dict):
        from .errors import BadResponse
        raise BadResponse(f"expected a JSON object for {cls.__name__}")
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kw = {k: v for k, v in d.items() if k in names and k != "raw"}
    return cls(raw=d, **kw)  # type: ignore[call-arg]


@dataclass
class Scope:
    user_id: Optional[str] = None
    agent_id: Optional[str] = None
    app_id: Optional[str] = None
    project_id: Optional[str] = None
    session_id: Optional[str] = None

    def to_json(self) -> Dict[str, str]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v}


@dataclass
class Record:
    """One memory at one version."""
    id: str = ""
    type: str = ""
    content: str = ""
    category: str = ""
    version: int = 0
    status: str = ""
    access: str = ""
    classification: str = ""
    content_sha256: str = ""
    metadata: Any = None
    entities: Optional[List[str]] = None
    scope: Dict[str, str] = field(default_factory=dict)
    source: Dict[str, Any] = field(default_factory=dict)
    gate: Dict[str, Any] = field(default_factory=dict)
    valid_from: Optional[str] = None
    valid_until: Optional[str] = None
    created_at: str = ""
    updated_at: str = ""
    citation: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Any) -> "Record":
        return _build(cls, d)


@dataclass
class WriteResult:
    """The gate's answer to a write or a patch."""
    decision: str = ""
    reason: str = ""
    citation: str = ""
    approval_id: str = ""
    record: Record = field(default_factory=Record)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Any) -> "WriteResult":
        r = _build(cls, d)
        r.record = Record.from_json(d.get("record") or {})
        return r


@dataclass
class SearchHit:
    record: Record = field(default_factory=Record)
    score: float = 0.0
    relevance: float = 0.0
    citation: str = ""
    explain: Optional[Dict[str, Any]] = None
    evidence: Optional[Dict[str, Any]] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Any) -> "SearchHit":
        h = _build(cls, d)
        h.record = Record.from_json(d.get("record") or {})
        return h


@dataclass
class SearchResponse:
    route: str = ""
    signals: List[str] = field(default_factory=list)
    results: List[SearchHit] = field(default_factory=list)
    degraded: Optional[List[str]] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Any) -> "SearchResponse":
        s = _build(cls, d)
        s.results = [SearchHit.from_json(h) for h in (d.get("results") or [])]
        return s


@dataclass
class ListResult:
    records: List[Record] = field(default_factory=list)
    next_cursor: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Any) -> "ListResult":
        r = _build(cls, d)
        r.records = [Record.from_json(x) for x in (d.get("records") or [])]
        r.next_cursor = d.get("next_cursor") or ""
        return r


@dataclass
class ToolResult:
    """A tool_result content block to send back to Claude."""
    type: str = "tool_result"
    tool_use_id: str = ""
    content: str = ""
    is_error: bool = False
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Any) -> "ToolResult":
        return _build(cls, d)

    def to_block(self) -> Dict[str, Any]:
        b: Dict[str, Any] = {"type": "tool_result", "tool_use_id": self.tool_use_id, "content": self.content}
        if self.is_error:
            b["is_error"] = True
        return b


@dataclass
class Principal:
    id: str = ""
    name: str = ""
    kind: str = ""
    workspace: str = ""
    trust: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Any) -> "Principal":
        return _build(cls, d)


@dataclass
class ReferenceItem:
    """A recalled memory for a model's context: reference data, never an
    instruction (untrusted is always True)."""
    id: str
    session_id: str
    text: str
    score: float
    source_scope: str
    resource_uri: str = ""
    untrusted: bool = True


@dataclass
class Event:
    """An outcome of the gateway helper, with sanitized metadata only:
    never the key, the user id or a body."""
    name: str
    operation: str
    category: str = ""
    status: int = 0
    results: int = 0
    messages: int = 0
    job_id: str = ""
    duration: float = 0.0

    @property
    def failed(self) -> bool:
        return self.category != ""
