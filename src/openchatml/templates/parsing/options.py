"""How to parse one message: :class:`ParseOptions`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ParseOptions:
    """How to parse one message.

    ``tools``: the tools offered, OpenAI-style (``{"type": "function", "function": {name,
    description, parameters}}``; a bare function object works too): their schemas type
    raw tagged arguments. ``extract_reasoning``: ``False`` leaves reasoning, markers and
    all, in the content. ``prefix``: the text the prompt already wrote of this message
    (after its role header). ``partial``: the output is cut off mid-stream; what is
    uncertain at the end is left out, open calls stay open, and no truncation is warned
    of. ``json_schema``: the answer is JSON (structured output); a ````` ```json ````` fence
    around it is removed.
    """

    tools: tuple[Mapping[str, Any], ...] = ()
    extract_reasoning: bool = True
    prefix: str = ""
    partial: bool = False
    json_schema: Mapping[str, Any] | None = None
