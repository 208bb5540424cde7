"""The OCM §2 YAML document header: read from text, written to text.

A transcript may open with a YAML mapping (``version: 2.2`` and optional ``model``,
``generation_settings``, ``capabilities``, ``profiles``) before its first ``<|start|>``.
Unknown keys are kept in ``TranscriptHeader.extra`` and otherwise ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import yaml

from ._json import plain
from .errors import Position, TranscriptHeaderError, text_position
from .messages import TranscriptHeader

_KNOWN = ("version", "model", "generation_settings", "capabilities", "profiles")


def _mapping(value: Any, key: str) -> Mapping[str, Any]:
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise TranscriptHeaderError(f"'{key}' must be a mapping, not {type(value).__name__}")
    return MappingProxyType(dict(value))


def parse_transcript_header(text: str) -> TranscriptHeader:
    """The header ``text`` spells. Raises :class:`TranscriptHeaderError` when it is not
    a YAML mapping with a ``version``."""
    # a fenced block, as the specification shows it: blank the fence lines, keep positions
    body = "\n".join("" if line.startswith("```") else line for line in text.split("\n"))
    start = text_position(text, len(text) - len(text.lstrip()))
    try:
        data = yaml.safe_load(body)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = Position(mark.index, mark.line + 1, mark.column + 1) if mark is not None else start
        problem = getattr(exc, "problem", None) or str(exc)
        raise TranscriptHeaderError(f"the transcript header is not YAML: {problem}", position=where) from None
    if not isinstance(data, Mapping):
        raise TranscriptHeaderError("text before the first message is not a YAML header", position=start)
    if "version" not in data:
        raise TranscriptHeaderError("the transcript header has no 'version'", position=start)
    version = data["version"]
    if not isinstance(version, str | int | float) or isinstance(version, bool):
        raise TranscriptHeaderError("'version' must be a number such as 2.2", position=start)
    model = data.get("model")
    extra = {str(k): v for k, v in data.items() if k not in _KNOWN}
    return TranscriptHeader(
        version=str(version),
        model=None if model is None else str(model),
        generation_settings=_mapping(data.get("generation_settings"), "generation_settings"),
        capabilities=_mapping(data.get("capabilities"), "capabilities"),
        profiles=_mapping(data.get("profiles"), "profiles"),
        extra=MappingProxyType(extra),
    )


def render_transcript_header(header: TranscriptHeader) -> str:
    """YAML text for ``header``, ending in a newline; :func:`parse_transcript_header` reads it back."""
    data: dict[str, Any] = {"version": header.version}
    if header.model is not None:
        data["model"] = header.model
    for key in ("generation_settings", "capabilities", "profiles"):
        value = getattr(header, key)
        if value:
            data[key] = plain(value)
    data.update(plain(header.extra))
    text: str = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
    return text
