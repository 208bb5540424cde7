"""Prompt text → token ids with a Hugging Face tokenizer, where the text of messages can
never become a control token.

A tokenizer matches its added tokens (``<|im_start|>``, ``<think>``, ``<tool_call>`` …)
anywhere in the text it encodes, so encoding a rendered prompt whole would turn a user's
literal ``<|im_start|>`` into the real marker. :func:`prompt_ids` renders the
conversation with a placeholder in place of every message text, encodes the template's
own text as it is (its markers become their ids) and each message text by
:func:`encode_literal` (a marker spelled inside it is encoded as ordinary characters).
Where no message text spells a marker, the prompt is encoded whole (the same ids,
faster).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

from ..messages import Conversation, Message
from .environment import ChatTemplate
from .errors import TemplateRenderError
from .prompt import render_prompt, template_messages

_MARK: Final = "\ue000"
_PLACEHOLDER: Final = re.compile("\ue000(\\d+)\ue001")


class Tokenizer(Protocol):
    """What is used of a Hugging Face tokenizer."""

    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...

    def get_added_vocab(self) -> dict[str, int]: ...


def markers_of(tokenizer: Tokenizer) -> tuple[str, ...]:
    """The texts the tokenizer turns into added tokens, longest first."""
    return tuple(sorted(tokenizer.get_added_vocab(), key=len, reverse=True))


def encode_literal(tokenizer: Tokenizer, text: str, markers: Sequence[str]) -> list[int]:
    """``text`` as ids where every spelling of a marker is ordinary characters: the text
    is cut right after a marker's first character, so the tokenizer never sees it whole."""
    ids: list[int] = []
    rest = text
    while rest:
        found = min(((rest.find(m), m) for m in markers if m and m in rest), default=None)
        if found is None:
            ids += tokenizer.encode(rest, add_special_tokens=False)
            break
        at, _marker = found
        if at:
            ids += tokenizer.encode(rest[:at], add_special_tokens=False)
        ids += tokenizer.encode(rest[at], add_special_tokens=False)
        rest = rest[at + 1 :]
    return ids


def _texts(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    out = []
    for message in messages:
        for key in ("content", "reasoning_content"):
            value = message.get(key)
            if isinstance(value, str):
                out.append(value)
    return out


def prompt_ids(
    template: ChatTemplate,
    conversation: Conversation | Sequence[Message],
    tokenizer: Tokenizer,
    *,
    markers: Sequence[str] | None = None,
    **render: Any,
) -> tuple[str, list[int]]:
    """The prompt text of ``conversation`` (see :func:`~.prompt.render_prompt`, which
    ``render`` reaches: ``tools``, ``thinking`` and the template's ``reasoning`` format,
    template variables) and its ids, message texts encoded as literals.

    Raises :class:`TemplateRenderError` when the template refuses the conversation, or
    when a message text spelling a marker is changed by the template so that it cannot be
    placed safely.
    """
    markers = markers_of(tokenizer) if markers is None else markers
    text = render_prompt(template, conversation, **render)
    messages, _ = template_messages(conversation)
    risky = [t for t in _texts(messages) if any(m and m in t for m in markers)]
    if not risky:
        return text, tokenizer.encode(text, add_special_tokens=False)
    values: list[str] = []

    def hold(value: str) -> str:
        values.append(value)
        return f"{_MARK}{len(values) - 1}\ue001"

    held = [
        {
            k: hold(v) if k in ("content", "reasoning_content") and isinstance(v, str) else v
            for k, v in m.items()
        }
        for m in messages
    ]
    shaped = render_prompt(template, conversation, hf_messages=held, **render)
    ids: list[int] = []
    used: set[int] = set()
    at = 0
    for match in _PLACEHOLDER.finditer(shaped):
        ids += tokenizer.encode(shaped[at : match.start()], add_special_tokens=False)
        index = int(match.group(1))
        used.add(index)
        ids += encode_literal(tokenizer, values[index], markers)
        at = match.end()
    ids += tokenizer.encode(shaped[at:], add_special_tokens=False)
    lost = [values[i] for i in range(len(values)) if i not in used and values[i] in risky]
    if lost or _MARK in _PLACEHOLDER.sub("", shaped):
        raise TemplateRenderError(
            f"{template.name}: a message spells one of the model's control markers, and the template "
            "rewrites that message, so it cannot be kept from becoming a control token"
        )
    return text, ids
