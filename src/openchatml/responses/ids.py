"""Identifiers of responses, items and conversations: a type prefix and 48 random hex digits."""

from __future__ import annotations

import secrets
from typing import Final

MAX_ID_LENGTH: Final = 256
"""The longest id a client may give an item, or name a response or item by."""


def new_id(prefix: str) -> str:
    """A fresh id such as ``resp_3f…``: ``prefix``, an underscore, 48 hex digits."""
    return f"{prefix}_{secrets.token_hex(24)}"


def response_id() -> str:
    """A fresh response id (``resp_…``)."""
    return new_id("resp")


def message_id() -> str:
    """A fresh message item id (``msg_…``)."""
    return new_id("msg")


def reasoning_id() -> str:
    """A fresh reasoning item id (``rs_…``)."""
    return new_id("rs")


def function_call_id() -> str:
    """A fresh function call item id (``fc_…``)."""
    return new_id("fc")


def call_id() -> str:
    """A fresh tool-call id (``call_…``) tying a call to its output."""
    return new_id("call")


def function_call_output_id() -> str:
    """A fresh function call output item id (``fco_…``)."""
    return new_id("fco")


def custom_tool_call_id() -> str:
    """A fresh custom tool call item id (``ctc_…``)."""
    return new_id("ctc")


def custom_tool_call_output_id() -> str:
    """A fresh custom tool call output item id (``ctco_…``)."""
    return new_id("ctco")


def compaction_id() -> str:
    """A fresh compaction item id (``cmp_…``)."""
    return new_id("cmp")


def conversation_id() -> str:
    """A fresh conversation id (``conv_…``)."""
    return new_id("conv")
