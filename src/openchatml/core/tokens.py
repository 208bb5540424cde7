"""Control tokens, their ids in o200k_harmony, and the text-path escaping rules.

Two paths carry a conversation:

* **tokens** — control tokens are single special ids; every piece of text (content and
  header values alike) is encoded as ordinary BPE, so text can never become a control
  token there and nothing needs escaping.
* **text** — control tokens are the ASCII sequences ``<|start|>`` …; a body that itself
  contains one of those sequences is escaped by doubling its leading ``<`` (OCM §3:
  ``<<|start|>`` reads as the text ``<|start|>``), and a body that ends in ``<`` puts
  those trailing ``<`` in a literal block so that they cannot escape the terminator.
  :func:`escape_text` and the text parser are exact inverses.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Final


class ControlToken(StrEnum):
    """The nine control tokens of OCM 2.2 §3 (the first seven are Harmony's)."""

    START = "<|start|>"
    CHANNEL = "<|channel|>"
    MESSAGE = "<|message|>"
    CALL = "<|call|>"
    CONSTRAIN = "<|constrain|>"
    RETURN = "<|return|>"
    END = "<|end|>"
    LITERAL = "<|literal|>"
    ENDLITERAL = "<|endliteral|>"


TOKEN_IDS: Final[dict[ControlToken, int]] = {
    ControlToken.RETURN: 200002,
    ControlToken.CONSTRAIN: 200003,
    ControlToken.CHANNEL: 200005,
    ControlToken.START: 200006,
    ControlToken.END: 200007,
    ControlToken.MESSAGE: 200008,
    ControlToken.CALL: 200012,
}
"""Ids of the control tokens that o200k_harmony registers as single tokens."""

START_ID: Final = 200006
CHANNEL_ID: Final = 200005
MESSAGE_ID: Final = 200008
CALL_ID: Final = 200012
CONSTRAIN_ID: Final = 200003
RETURN_ID: Final = 200002
END_ID: Final = 200007

FIRST_SPECIAL_ID: Final = 199998
"""Every id at or above this one is a special token in o200k_harmony."""
LAST_SPECIAL_ID: Final = 201088

TERMINATORS: Final[frozenset[ControlToken]] = frozenset(
    {ControlToken.END, ControlToken.RETURN, ControlToken.CALL}
)
TERMINATOR_IDS: Final[frozenset[int]] = frozenset({END_ID, RETURN_ID, CALL_ID})

NAMED_SPECIAL_TOKENS: Final[dict[str, int]] = {
    "<|startoftext|>": 199998,
    "<|endoftext|>": 199999,
    "<|return|>": RETURN_ID,
    "<|constrain|>": CONSTRAIN_ID,
    "<|channel|>": CHANNEL_ID,
    "<|start|>": START_ID,
    "<|end|>": END_ID,
    "<|message|>": MESSAGE_ID,
    "<|call|>": CALL_ID,
}
"""The named special tokens of o200k_harmony; every other id in range is ``<|reserved_N|>``."""


def special_token_text(token_id: int) -> str:
    """The text of special token ``token_id`` (``<|start|>``, ``<|reserved_200000|>`` …)."""
    for text, tid in NAMED_SPECIAL_TOKENS.items():
        if tid == token_id:
            return text
    if FIRST_SPECIAL_ID <= token_id <= LAST_SPECIAL_ID:
        return f"<|reserved_{token_id}|>"
    raise ValueError(f"{token_id} is not a special token id")


# --- text-path escaping ---------------------------------------------------------------

_TOKEN_ALTERNATION = "|".join(re.escape(t.value) for t in ControlToken)
TOKEN_RE: Final = re.compile(_TOKEN_ALTERNATION)
"""Matches any of the nine control-token sequences."""

MAX_TOKEN_LEN: Final = max(len(t.value) for t in ControlToken)
"""The longest control-token sequence: how far the text parser must look ahead."""

_ESCAPE_RE: Final = re.compile(f"(?={_TOKEN_ALTERNATION})")


def escape_text(text: str) -> str:
    """Body text → text-path form that the text parser reads back as ``text``.

    Each control-token sequence gets one extra leading ``<``; trailing ``<`` characters
    move into a literal block so that none can join the terminator that follows.
    """
    if "<" not in text:
        return text
    out = _ESCAPE_RE.sub("<", text) if "<|" in text else text
    if out.endswith("<"):
        head = out.rstrip("<")
        out = head + ControlToken.LITERAL + out[len(head) :] + ControlToken.ENDLITERAL
    return out


_HEADER_UNSAFE_RE: Final = re.compile(r"\s+")


def sanitize_header_value(value: str) -> str:
    """A header value made safe: whitespace runs become ``_`` and ``<|`` loses its ``|``.

    Header values (names, recipients, channels, content types, call ids, intents) are
    single words in both grammars; a value passing through unchanged round-trips.
    """
    if not value:
        return "_"
    out = _HEADER_UNSAFE_RE.sub("_", value)
    while "<|" in out:
        out = out.replace("<|", "<")
    return out
