"""Errors raised by the memgate client.

Every error response of memgate has one shape,
``{"error": {"code", "message", "details"}}``; it becomes a
:class:`MemgateError` (or the subclass for its code) carrying the code, the
message, the offending field when the server names one, and the HTTP status.
"""

from __future__ import annotations

from typing import Any, Dict, Optional


class MemgateError(Exception):
    """An error answer from memgate, or a failure to reach it."""

    def __init__(self, message: str, *, status: int = 0, code: str = "",
                 field: Optional[str] = None, details: Optional[Dict[str, Any]] = None,
                 retry_after: Optional[float] = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.field = field
        self.details: Dict[str, Any] = details or {}
        self.retry_after = retry_after

    def __str__(self) -> str:
        where = f" (field {self.field})" if self.field else ""
        head = f"memgate: {self.code or 'error'}"
        if self.status:
            head += f" [{self.status}]"
        return f"{head}: {self.message}{where}"


class InvalidArgument(MemgateError):
    """invalid_argument (400): the request is malformed; ``field`` names where."""


class Unauthenticated(MemgateError):
    """unauthenticated (401): missing, invalid or revoked token."""


class PermissionDenied(MemgateError):
    """permission_denied (403)."""


class NotFound(MemgateError):
    """not_found (404)."""


class VersionConflict(MemgateError):
    """version_conflict (409): the record changed since you read it."""


class Conflict(MemgateError):
    """conflict (409): a state conflict other than versions."""


class TooLarge(MemgateError):
    """too_large (413)."""


class GateRejected(MemgateError):
    """gate_rejected (422): the write gate refused the write."""


class RateLimited(MemgateError):
    """rate_limited (429); ``retry_after`` says when to try again."""


class Unavailable(MemgateError):
    """unavailable (503)."""


class BadResponse(MemgateError):
    """memgate answered something that is not the documented shape."""


class TransportError(MemgateError):
    """memgate could not be reached (connection refused, timeout, ...)."""


_BY_CODE = {
    "invalid_argument": InvalidArgument,
    "unauthenticated": Unauthenticated,
    "permission_denied": PermissionDenied,
    "not_found": NotFound,
    "version_conflict": VersionConflict,
    "conflict": Conflict,
    "too_large": TooLarge,
    "gate_rejected": GateRejected,
    "rate_limited": RateLimited,
    "unavailable": Unavailable,
}


def error_from_body(status: int, body: Any, retry_after: Optional[float]) -> MemgateError:
    """Builds the exception for an error response."""
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return BadResponse(f"HTTP {status} without memgate's error body", status=status, retry_after=retry_after)
    code = str(err.get("code") or "")
    details = err.get("details") if isinstance(err.get("details"), dict) else {}
    field = details.get("field") if isinstance(details.get("field"), str) else None
    cls = _BY_CODE.get(code, MemgateError)
    return cls(str(err.get("message") or ""), status=status, code=code, field=field,
               details=details, retry_after=retry_after)
