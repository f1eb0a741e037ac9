"""HTTP over urllib: JSON in and out, error mapping, and retries for
idempotent requests only."""

from __future__ import annotations

import json
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Mapping, Optional

from .errors import BadResponse, MemgateError, TransportError, error_from_body

IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE"})
RETRY_STATUSES = frozenset({429, 502, 503, 504})
USER_AGENT = "memgate-python/0.1"


def _retry_after(value: Optional[str]) -> Optional[float]:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class Transport:
    def __init__(self, base_url: str, *, timeout: float = 30.0, retries: int = 2,
                 max_backoff: float = 5.0, headers: Optional[Mapping[str, str]] = None) -> None:
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.netloc:
            raise ValueError("base_url must be an http(s) URL")
        self.base = base_url.rstrip("/")
        self.timeout = timeout
        self.retries = max(0, retries)
        self.max_backoff = max_backoff
        self.headers = dict(headers or {})
        self._sleep = time.sleep

    def request(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None,
                body: Any = None, headers: Optional[Mapping[str, str]] = None,
                expect: str = "json") -> Any:
        """Sends one request; retries only idempotent methods, on
        connection failures and 429/502/503/504, honouring Retry-After."""
        url = self.base + path
        if query:
            q = {k: ("true" if v is True else "false" if v is False else v) for k, v in query.items() if v is not None}
            if q:
                url += "?" + urllib.parse.urlencode(q, doseq=True)
        data = None
        h = {"Accept": "application/json", "User-Agent": USER_AGENT, **self.headers, **(headers or {})}
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            h["Content-Type"] = "application/json"
        attempts = 1 + (self.retries if method.upper() in IDEMPOTENT else 0)
        for attempt in range(attempts):
            last = attempt == attempts - 1
            req = urllib.request.Request(url, data=data, method=method.upper(), headers=h)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    raw = resp.read()
                    status = resp.status
            except urllib.error.HTTPError as e:
                raw = e.read()
                status = e.code
                ra = _retry_after(e.headers.get("Retry-After"))
                try:
                    parsed = json.loads(raw) if raw else None
                except ValueError:
                    parsed = None
                err = error_from_body(status, parsed, ra)
                if status in RETRY_STATUSES and not last:
                    self._backoff(attempt, ra)
                    continue
                raise err from None
            except (urllib.error.URLError, socket.timeout, ConnectionError, TimeoutError) as e:
                if not last:
                    self._backoff(attempt, None)
                    continue
                reason = getattr(e, "reason", e)
                raise TransportError(f"{method} {path}: {type(reason).__name__}") from None
            if expect == "text":
                return raw.decode("utf-8")
            if not raw:
                return None
            try:
                return json.loads(raw)
            except ValueError:
                raise BadResponse(f"{method} {path}: response is not JSON", status=status) from None
        raise MemgateError("unreachable")  # pragma: no cover

    def _backoff(self, attempt: int, retry_after: Optional[float]) -> None:
        if retry_after is not None:
            d = retry_after
        else:
            d = 0.1 * (2 ** attempt) * (0.5 + random.random())
        self._sleep(min(d, self.max_backoff))


def need(obj: Any, key: str, what: str) -> Any:
    """Returns obj[key], or raises BadResponse naming what is missing."""
    if not isinstance(obj, dict) or key not in obj:
        raise BadResponse(f"{what}: response lacks {key!r}")
    return obj[key]


def clean(d: Dict[str, Any]) -> Dict[str, Any]:
    """Drops None values (the server applies its defaults)."""
    return {k: v for k, v in d.items() if v is not None}
