"""memgate: the Python client for memgate, a governed memory server for AI
agents. Standard library only.

    from memgate import Client
    mg = Client("http://127.0.0.1:8080", token)
    mg.write("preference", "Alice prefers window seats", scope={"user_id": "alice"})
    hits = mg.search("where does alice like to sit?", scope={"user_id": "alice"})
"""

from .client import Client
from .errors import (BadResponse, Conflict, GateRejected, InvalidArgument, MemgateError, NotFound,
                     PermissionDenied, RateLimited, TooLarge, TransportError, Unauthenticated, Unavailable,
                     VersionConflict)
from .gateway import GatewayClient, Hybrid, session_id
from .memorytool import MemoryToolHandler
from .types import (Event, ListResult, Principal, Record, ReferenceItem, Scope, SearchHit, SearchResponse,
                    ToolResult, WriteResult)

__all__ = [
    "Client", "GatewayClient", "Hybrid", "MemoryToolHandler", "session_id",
    "MemgateError", "InvalidArgument", "Unauthenticated", "PermissionDenied", "NotFound", "VersionConflict",
    "Conflict", "TooLarge", "GateRejected", "RateLimited", "Unavailable", "BadResponse", "TransportError",
    "Record", "WriteResult", "SearchHit", "SearchResponse", "ListResult", "ToolResult", "Principal", "Scope",
    "ReferenceItem", "Event",
]
__version__ = "0.1.0"
