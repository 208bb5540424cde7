"""JSON-shaped data: made plain (dicts and lists) or read-only (mapping proxies)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any


def plain(value: Any) -> Any:
    """``value`` as plain JSON data: mappings → dicts, sequences and sets → lists,
    dates → ISO text, bytes → text; anything else as it is."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v) for v in value]
    if isinstance(value, _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def frozen(value: Any) -> Any:
    """``value`` with every mapping made read-only, all the way down (lists stay lists)."""
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): frozen(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return [frozen(v) for v in value]
    return value


def deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests objects and arrays more than ``limit`` levels deep (a
    scalar is 0 levels, ``[]`` one); checked without recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
