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
  (the end-of-turn marker learns, the newline after it does not). Where the full render
  writes message ``i`` differently (a template that drops the reasoning of earlier
  turns), the message's content is swapped for a stand-in character: the full render and
  its swapped copy differ only there, and the text that follows the content in the
  render up to ``i`` closes the span.

Characters map to tokens by the tokenizer's bytes: a token learns when its first byte
lies in a span. A render that breaks these assumptions raises :class:`TemplateMaskError`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from ..core.messages import Conversation, Message
from ..templates.environment import ChatTemplate
from ..templates.model_tokenizer import ModelTokenizer
from ..templates.prompt import render_prompt, template_messages
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

    def text(self, messages: Sequence[Mapping[str, Any]], generation_prompt: bool) -> str:
        return render_prompt(
            self.template,
            self.conversation,
            hf_messages=messages,
            add_generation_prompt=generation_prompt,
            **self.settings,
        )


def _swapped_end(renders: _Renders, messages: list[dict[str, Any]], index: int, full: str) -> int:
    """End of assistant message ``index``'s span in ``full``, found by swapping its content."""
    swapped = [*messages[:index], {**messages[index], "content": _STAND_IN}, *messages[index + 1 :]]
    through = renders.text(swapped[: index + 1], False)
    if through.count(_STAND_IN) != 1:
        raise TemplateMaskError(f"the template does not write message {index}'s content once")
    closing = through[through.index(_STAND_IN) + 1 :].rstrip()
    variant = renders.text(swapped, False)
    if variant.count(_STAND_IN) != 1:
        raise TemplateMaskError(
            f"the template does not write message {index}'s content once in the full render"
        )
    before = variant.index(_STAND_IN)
    after = len(variant) - before - 1
    content_end = len(full) - after
    if not full.startswith(closing, content_end):
        raise TemplateMaskError(f"the template closes message {index} differently in the full render")
    return content_end + len(closing)


def assistant_spans(renders: _Renders, messages: list[dict[str, Any]], full: str) -> list[tuple[int, int]]:
    """Character spans of ``full`` (the render of ``messages``) that the assistant writes."""
    spans: list[tuple[int, int]] = []
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        before = renders.text(messages[:index], True)
        if not full.startswith(before):
            raise TemplateMaskError(f"the prompt of message {index} is not a prefix of the full render")
        through = renders.text(messages[: index + 1], False)
        if not through.startswith(before):
            raise TemplateMaskError(f"the render of message {index} does not continue its prompt")
        start = len(before)
        if full.startswith(through):
            end = len(through.rstrip())
        else:
            end = _swapped_end(renders, messages, index, full)
        if end > start:
            spans.append((start, max(start, end)))
    return spans


def _byte_offset(text: str) -> list[int]:
    """Byte offset in ``text``'s UTF-8 of every character position (and of its end)."""
    offsets = [0]
    for char in text:
        offsets.append(offsets[-1] + len(char.encode("utf-8")))
    return offsets


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
    if b"".join(tokenizer.token_bytes(token) for token in ids) != full.encode("utf-8"):
        raise TemplateMaskError("the tokenizer's bytes do not spell the prompt text")
    offsets = _byte_offset(full)
    byte_spans = [(offsets[start], offsets[end]) for start, end in spans]
    mask: list[int] = []
    at = 0
    for token in ids:
        mask.append(1 if any(start <= at < end for start, end in byte_spans) else 0)
        at += len(tokenizer.token_bytes(token))
    return MaskedSample(tuple(ids), tuple(mask))
