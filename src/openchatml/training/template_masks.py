"""Chat-template conversation → token ids + a loss mask learning the assistant's parts,
for any template, with or without ``{% generation %}`` markers.

Theory of operation. The conversation becomes the template's messages
(:func:`~openchatml.templates.prompt.template_messages`) and its prompt ids
(:func:`~openchatml.templates.tokenize.prompt_ids`, no generation prompt). For each
assistant message ``i`` the renders say where the model's own writing lies in the full
prompt text:

* it starts after the prompt the model samples from: the render of the messages before
  ``i`` with the generation prompt (the role header, and whatever the template opens
  every answer with, such as a forced ``<think>``, do not learn);
* it ends where the render of the messages up to ``i`` ends, less trailing whitespace
  (the end-of-turn marker learns, the newline after it does not).

Where the full render writes the conversation differently from those prefix renders (a
template that drops the reasoning of earlier turns, puts the tools or the system prompt
before the last user message only, or ends a tool message by whether it is the last), the
message is found by a stand-in character: its content is swapped for it (or, for a
message with calls only, it is appended to its last call's name). The full render and its
swapped copy agree up to the stand-in; the text that follows it in the render up to ``i``
closes the span, and the text the prefix render writes between the prompt and the
stand-in opens it, where the full render writes it too. Where it does not (earlier
reasoning dropped), the span opens after the last assistant role header
(:func:`~openchatml.templates.prompt.role_header`) before the stand-in.

Characters map to tokens by the tokenizer's bytes: a token learns when one of its bytes
lies in a span (as transformers' ``return_assistant_tokens_mask`` does: every token from
the one holding a span's first character to the one holding its last). A render that
breaks these assumptions raises :class:`TemplateMaskError`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from ..core.messages import Conversation, Message
from ..templates.environment import ChatTemplate
from ..templates.errors import TemplateRenderError
from ..templates.model_tokenizer import ModelTokenizer
from ..templates.prompt import render_prompt, role_header, template_messages
from ..templates.tokenize import prompt_ids
from .masks import MaskedSample

_STAND_IN: Final = "\ue000"


class TemplateMaskError(ValueError):
    """The template's renders do not say where an assistant message lies."""


class _Renders:
    """Renders of one conversation's template messages under fixed settings."""

    def __init__(
        self,
        template: ChatTemplate,
        conversation: Conversation | Sequence[Message],
        settings: Mapping[str, Any],
    ) -> None:
        self.template = template
        self.conversation = conversation
        self.settings = settings
        self._header: str | None = None

    def text(self, messages: Sequence[Mapping[str, Any]], generation_prompt: bool) -> str:
        return render_prompt(
            self.template,
            self.conversation,
            hf_messages=messages,
            add_generation_prompt=generation_prompt,
            **self.settings,
        )

    @property
    def header(self) -> str:
        """The assistant's role header (``""`` where the template has none or it cannot be found)."""
        if self._header is None:
            try:
                self._header = role_header(self.template, tools=self.settings.get("tools"))
            except TemplateRenderError:
                self._header = ""
        return self._header


def _markings(messages: list[dict[str, Any]], index: int) -> list[list[dict[str, Any]]]:
    """``messages`` with message ``index`` marked by the stand-in, each way it can be: its
    content swapped for it, and the stand-in appended to its last call's name."""
    message = messages[index]
    marked: list[dict[str, Any]] = []
    if isinstance(message.get("content"), str) and message["content"].strip():
        marked.append({**message, "content": _STAND_IN})
    if message.get("tool_calls"):
        calls = list(message["tool_calls"])
        function = dict(calls[-1]["function"])
        function["name"] = f"{function['name']}{_STAND_IN}"
        calls[-1] = {**calls[-1], "function": function}
        marked.append({**message, "tool_calls": calls})
    return [[*messages[:index], one, *messages[index + 1 :]] for one in marked]


def _marked_renders(renders: _Renders, messages: list[dict[str, Any]], index: int) -> tuple[str, str]:
    """The render up to message ``index`` and the full render, with the message marked by
    the first of its :func:`_markings` that both write once."""
    for marked in _markings(messages, index):
        through = renders.text(marked[: index + 1], False)
        if through.count(_STAND_IN) == 1:
            variant = renders.text(marked, False)
            if variant.count(_STAND_IN) == 1:
                return through, variant
    raise TemplateMaskError(f"the template does not write message {index}'s text or calls once")


def _prompt_end(text: str, prompt: str) -> int:
    """Where ``prompt`` ends in ``text``: after the last occurrence of the longest end of
    ``prompt`` that ``text`` holds (a prefix render may write earlier messages
    differently, never the prompt's own end)."""
    if text.startswith(prompt):
        return len(prompt)
    low, high = 0, len(prompt)  # ends of every length up to ``low`` occur in ``text``
    while low < high:
        size = (low + high + 1) // 2
        if prompt[len(prompt) - size :] in text:
            low = size
        else:
            high = size - 1
    return text.rfind(prompt[len(prompt) - low :]) + low


def _located_span(
    renders: _Renders, messages: list[dict[str, Any]], index: int, full: str, before: str
) -> tuple[int, int]:
    """The span of assistant message ``index`` in ``full``, found by the stand-in (see the
    module docstring); ``before`` is the prompt the model answers it from."""
    through, variant = _marked_renders(renders, messages, index)
    inside, anchor = through.index(_STAND_IN), variant.index(_STAND_IN)
    if not full.startswith(variant[:anchor]):
        raise TemplateMaskError(f"the full render changes before message {index} with its content")
    closing = through[inside + 1 :].rstrip()
    content_end = len(full) - (len(variant) - anchor - 1)
    if not full.startswith(closing, content_end):
        raise TemplateMaskError(f"the template closes message {index} differently in the full render")
    opening = through[_prompt_end(through[:inside], before) : inside]
    if full.endswith(opening, 0, anchor):
        start = anchor - len(opening)
    else:
        header = renders.header
        found = full.rfind(header, 0, anchor) if header else -1
        if found < 0:
            raise TemplateMaskError(f"no assistant header opens message {index} in the full render")
        start = found + len(header)
    return start, content_end + len(closing)


def assistant_spans(renders: _Renders, messages: list[dict[str, Any]], full: str) -> list[tuple[int, int]]:
    """Character spans of ``full`` (the render of ``messages``) that the assistant writes."""
    spans: list[tuple[int, int]] = []
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        before = renders.text(messages[:index], True)
        through = renders.text(messages[: index + 1], False)
        if full.startswith(before) and through.startswith(before) and full.startswith(through):
            start, end = len(before), len(through.rstrip())
        else:
            start, end = _located_span(renders, messages, index, full, before)
        if end > start:
            spans.append((start, end))
    return spans


def _byte_offset(text: str) -> list[int]:
    """Byte offset in ``text``'s UTF-8 of every character position (and of its end)."""
    offsets = [0]
    for char in text:
        offsets.append(offsets[-1] + len(char.encode("utf-8")))
    return offsets


def token_mask(sizes: Sequence[int], byte_spans: Sequence[tuple[int, int]]) -> list[int]:
    """1 for each token (of ``sizes`` bytes, in order) that shares a byte with one of the
    sorted, disjoint ``byte_spans``; 0 for the others."""
    mask: list[int] = []
    at = 0
    span = 0
    for size in sizes:
        while span < len(byte_spans) and byte_spans[span][1] <= at:
            span += 1
        inside = span < len(byte_spans) and byte_spans[span][0] < at + size
        mask.append(1 if inside else 0)
        at += size
    return mask


def template_sample(
    template: ChatTemplate,
    conversation: Conversation | Sequence[Message],
    tokenizer: ModelTokenizer,
    **settings: Any,
) -> MaskedSample:
    """``conversation`` as a training sample of a chat-template model (see the module
    docstring). ``settings`` reach :func:`~openchatml.templates.prompt.render_prompt`
    (``tools``, ``thinking``, template variables).

    Raises :class:`TemplateMaskError`, and the template's
    :class:`~openchatml.templates.errors.TemplateRenderError`.
    """
    if template.now is None:
        template = copy.copy(template)
        template.now = datetime.now()
    full, ids = prompt_ids(template, conversation, tokenizer, add_generation_prompt=False, **settings)
    messages, _ = template_messages(conversation)
    renders = _Renders(template, conversation, settings)
    if renders.text(messages, False) != full:
        raise TemplateMaskError("the prompt text is not the template's render of the conversation")
    spans = assistant_spans(renders, messages, full)
    pieces = [tokenizer.token_bytes(token) for token in ids]
    if b"".join(pieces) != full.encode("utf-8"):
        raise TemplateMaskError("the tokenizer's bytes do not spell the prompt text")
    offsets = _byte_offset(full)
    byte_spans = sorted((offsets[start], offsets[end]) for start, end in spans)
    return MaskedSample(tuple(ids), tuple(token_mask([len(piece) for piece in pieces], byte_spans)))
