"""A tool call's header: the text between its start and its arguments, where the model
writes the tool's name and perhaps the call's id."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from ..format import CallIdPosition
from .plan import ParsePlan

_NAME_TOKEN: Final = re.compile(r"[^\s<>\"'`\[\]{}(),;|]+")


def clean_name(text: str, schemas: Mapping[str, Any]) -> str:
    """A tool name from the text where one was written (quotes and spaces dropped); of
    a name with more around it, the longest offered tool's name in it, else its first
    word."""
    name = text.strip().strip("\"'`").strip()
    if not name or _NAME_TOKEN.fullmatch(name):
        return name
    known = [k for k in schemas if k in name]
    if known:
        return max(known, key=len)
    m = _NAME_TOKEN.search(name)
    return m.group() if m else ""


def split_header(header: str, plan: ParsePlan, schemas: Mapping[str, Any]) -> tuple[str, str]:
    """The name and id (``""`` if none) in the text between a call's start and its
    arguments."""
    h = header.strip()
    if plan.id_regex is not None:  # the id names the tool (``functions.get_weather:0``)
        m = plan.id_regex.fullmatch(h)
        if m is not None and "name" in m.groupdict():
            return clean_name(m.group("name"), schemas), m.group()
    id_ = ""
    id_prefix, id_suffix = plan.id_prefix, plan.id_suffix
    if plan.id_position is CallIdPosition.BEFORE_NAME and id_prefix and h.startswith(id_prefix):
        rest = h[len(id_prefix) :]
        cut = rest.find(id_suffix) if id_suffix else -1
        if cut < 0 and plan.name_prefix:
            cut = rest.find(plan.name_prefix)
        if cut >= 0:
            id_, h = (
                rest[:cut].strip(),
                rest[cut + (len(id_suffix) if id_suffix and rest.startswith(id_suffix, cut) else 0) :],
            )
        else:
            id_, h = rest.strip(), ""
        h = h.strip()
    if plan.name_prefix:
        k = h.find(plan.name_prefix)
        if k >= 0:
            h = h[k + len(plan.name_prefix) :]
    if id_prefix and not id_:
        k = h.find(id_prefix)
        if k >= 0:
            rest = h[k + len(id_prefix) :]
            h = h[:k]
            if id_suffix and id_suffix in rest:
                rest = rest[: rest.index(id_suffix)]
            id_ = rest.strip()
    if plan.name_suffix:
        k = h.find(plan.name_suffix)
        if k >= 0:
            h = h[:k]
    return clean_name(h, schemas), id_
