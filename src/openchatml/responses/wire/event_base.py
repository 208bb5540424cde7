"""The base of every streaming event: :class:`StreamEvent`, its ``sequence_number`` and its
JSON in a dialect (the Open Responses name of its ``type``, respelled by :mod:`.dialects`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from .dialects import DEFAULT_DIALECT, WireDialect, wire_type

_FIELDS: Final[dict[type, tuple[str, ...]]] = {}


def field_names(cls: type) -> tuple[str, ...]:
    """The names of the fields of the event class ``cls``, in order."""
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(field.name for field in dataclasses.fields(cls))
    return names


def json_value(value: Any, dialect: WireDialect) -> Any:
    """A field of an event as JSON in ``dialect`` (a wire model through its own ``to_json``)."""
    if value is None or isinstance(value, str | int | float):
        return value
    if isinstance(value, tuple):
        return [json_value(v, dialect) for v in value]
    if isinstance(value, Mapping):
        return dict(value)
    return value.to_json(dialect)


set_frozen: Final = object.__setattr__
"""Sets a field of a frozen event: the delta events' own ``__init__`` calls it directly,
at half the cost of the generated one's (they are built for every sampled token)."""


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """A streaming event: its ``type`` (the class's) and ``sequence_number``."""

    type: ClassVar[str] = ""
    sequence_number: int

    def to_json(self, dialect: WireDialect = DEFAULT_DIALECT) -> dict[str, Any]:
        """The event's JSON object in ``dialect``."""
        out: dict[str, Any] = {"type": wire_type(self.type, dialect)}
        for name in field_names(type(self)):
            out[name] = json_value(getattr(self, name), dialect)
        return out
