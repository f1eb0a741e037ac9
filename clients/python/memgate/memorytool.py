"""Claude's memory tool (memory_20250818) backed by memgate memory files.

An application using Anthropic's Python SDK lists
``MemoryToolHandler.definition`` in its tools and, for each tool_use block
named "memory", appends ``handler.handle(block)`` to the next user message.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from .client import Client, ScopeLike
from .types import ToolResult

TOOL_TYPE = "memory_20250818"
TOOL_NAME = "memory"


def _field(block: Any, name: str) -> Any:
    if isinstance(block, Mapping):
        return block.get(name)
    return getattr(block, name, None)


class MemoryToolHandler:
    """Runs memory tool calls in memgate as the client's principal."""

    definition: Dict[str, str] = {"type": TOOL_TYPE, "name": TOOL_NAME}

    def __init__(self, client: Client, *, scope: ScopeLike = None) -> None:
        self._client = client
        self._scope = scope

    def run(self, tool_input: Mapping[str, Any]) -> ToolResult:
        """Runs one call given its input ({"command": "view", "path": ...})."""
        return self._client.memory_tool(dict(tool_input), scope=self._scope)

    def handle(self, block: Any) -> Dict[str, Any]:
        """The tool_result block for a tool_use block (a dict or an SDK
        object with type, id, name and input)."""
        name = _field(block, "name")
        if name != TOOL_NAME:
            raise ValueError("not a memory tool call")
        tool_input: Optional[Mapping[str, Any]] = _field(block, "input")
        res = self.run(tool_input or {})
        res.tool_use_id = str(_field(block, "id") or "")
        return res.to_block()

    __call__ = handle
