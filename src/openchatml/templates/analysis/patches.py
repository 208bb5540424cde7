"""Template-specific facts that differential analysis cannot find, as data.

Each patch is keyed by the sha256 of a template's text (the template's name alongside,
for people) and holds field overrides applied after analysis; the patch's name is
recorded in ``TemplateFormat.patches``. A patch is only for a fact no rendering shows
(the template never writes reasoning or tool calls, or writes them only inside its
instructions); each one says why.

Overrides are dotted paths into the format: ``"reasoning.start"``, ``"tools.syntax"``,
``"end_markers"`` (a list for a tuple field).
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..format import TemplateFormat


@dataclass(frozen=True, slots=True)
class Patch:
    """Field overrides for one template (``name``: for people; ``why``: the reason)."""

    name: str
    why: str
    overrides: dict[str, Any]


_LFM2_TOOLS: dict[str, Any] = {
    "tools.syntax": "pythonic",
    "tools.section_start": "<|tool_call_start|>",
    "tools.section_end": "<|tool_call_end|>",
    "tools.separator": ", ",
    "tools.array": True,
    "tools.parallel": True,
}
_THINK_TAGS: dict[str, Any] = {
    "reasoning.mode": "tags",
    "reasoning.start": "<think>",
    "reasoning.end": "</think>",
}

PATCHES: dict[str, Patch] = {
    "3c71df5f659987462c882bf9e295b597dc19902467a7312ea382c5896681bc02": Patch(
        "ibm-granite-granite-3.3-2B-Instruct",
        "The template never renders reasoning: with `thinking` set it only tells the model, in the "
        "system prompt, to write its thoughts between <think></think> and its answer between "
        "<response></response>.",
        {
            **_THINK_TAGS,
            "content.mode": "wrapped_with_reasoning",
            "content.start": "<response>",
            "content.end": "</response>",
        },
    ),
    "2294f49b51a0b9a1b0194add3f124237b5bd986599f43180eec49bba4de01365": Patch(
        "LFM2-8B-A1B",
        "The template renders an assistant message's content only, never its tool_calls: the model writes "
        "its calls as text, a Python list between <|tool_call_start|> and <|tool_call_end|> (the LFM2.5 "
        "templates render exactly that).",
        _LFM2_TOOLS,
    ),
    "f05bf4b967dc993bdc7a2fe6e43759ee218eb0eb340d68b063e1c4f8ad148176": Patch(
        "LFM2.5-Instruct",
        "As LFM2-8B-A1B: tool_calls are never rendered; the model writes them as a Python list between "
        "<|tool_call_start|> and <|tool_call_end|> (as LFM2.5-8B-A1B's template renders them).",
        _LFM2_TOOLS,
    ),
    "9fcc72b7c248a72020c81f70bb652f3094d18a750c93ca35dfcb3cf5fe23ff53": Patch(
        "moonshotai-Kimi-K2",
        "The template drops reasoning and has no thinking switch; Kimi K2 models write reasoning between "
        "<think> and </think> (the Kimi-K2-Thinking template renders it so), which a parser must still "
        "take out of the answer.",
        _THINK_TAGS,
    ),
    "1d396d5b128cdb9b2a4ef73434fa08d31c75604a11daa77bcb4b622d32dddd41": Patch(
        "Kimi-K2-Instruct",
        "As moonshotai-Kimi-K2: reasoning is never rendered; the family writes it between <think> and "
        "</think>.",
        _THINK_TAGS,
    ),
}


def source_digest(source: str) -> str:
    """The sha256 of a template's text (the key of :data:`PATCHES`)."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def apply_patches(fmt: TemplateFormat, source: str) -> TemplateFormat:
    """``fmt`` with the patch for ``source`` applied (unchanged if there is none)."""
    patch = PATCHES.get(source_digest(source))
    if patch is None:
        return fmt
    out = fmt
    for path, value in patch.overrides.items():
        out = _set(out, path.split("."), value)
    return dataclasses.replace(out, patches=(*out.patches, patch.name))


def _set(obj: Any, path: list[str], value: Any) -> Any:
    """``obj`` with the field at ``path`` set to ``value`` (a list for a tuple, an enum's
    value for an enum)."""
    head = path[0]
    if len(path) > 1:
        return dataclasses.replace(obj, **{head: _set(getattr(obj, head), path[1:], value)})
    current = getattr(obj, head)
    if isinstance(current, tuple) and isinstance(value, list):
        value = tuple(value)
    elif isinstance(current, Enum) and isinstance(value, str):
        value = type(current)(value)
    return dataclasses.replace(obj, **{head: value})
