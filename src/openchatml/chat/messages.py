"""Chat messages → the Responses input items a response runs on, and back the way errors go.

:func:`message_items` turns ``messages`` into typed input items (see the table) and says,
for each item, the ``param`` of the message part it came from; :func:`chat_param` uses
that to name, in a chat request's terms, the ``param`` of an error the Responses layer
raised in its own (``input[3].content[0]`` → ``messages[2].content[0]``,
``tools[1].parameters`` → ``tools[1].function.parameters``).

==============================================  ========================================
message                                         items
==============================================  ========================================
``system``                                      ``message`` (role ``system``)
``developer``                                   ``message`` (role ``developer``)
``user``: text, ``image_url``, ``file`` parts   ``message`` (role ``user``): ``input_text``,
                                                ``input_image``, ``input_file``
``assistant``                                   ``reasoning`` (from ``reasoning_content`` or
                                                ``reasoning``), then a ``message`` (its
                                                text; a preamble when calls follow), then
                                                one ``function_call`` per tool call
``tool``                                        ``function_call_output``
==============================================  ========================================

``input_audio`` parts are refused here (no model served reads audio); images go on, for
the model's dialect to refuse when it reads text only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from ..responses.errors import RequestError
from ..responses.wire.content import (
    InputFile,
    InputImage,
    InputPart,
    InputText,
    OutputPart,
    OutputText,
    ReasoningText,
    Refusal,
)
from ..responses.wire.items import (
    AssistantMessage,
    DeveloperMessage,
    FunctionCall,
    FunctionCallOutput,
    InputItem,
    Phase,
    ReasoningItem,
    SystemMessage,
    UserMessage,
)
from .wire import (
    AssistantMessageParam,
    AudioPart,
    DeveloperMessageParam,
    FilePart,
    ImagePart,
    MessageParam,
    RefusalPart,
    SystemMessageParam,
    TextPart,
    ToolMessageParam,
    UserMessageParam,
)

_INPUT: Final = re.compile(r"input\[(\d+)\]")
_RENAMED: Final = (
    (re.compile(r"^tools\[(\d+)\]\.(?!function\b)"), r"tools[\1].function."),
    (re.compile(r"^tool_choice\.name$"), "tool_choice.function.name"),
    (re.compile(r"^tool_choice\.tools"), "tool_choice.allowed_tools.tools"),
    (re.compile(r"^text\.format\.schema$"), "response_format.json_schema.schema"),
    (re.compile(r"^text\.format"), "response_format"),
    (re.compile(r"^max_output_tokens$"), "max_completion_tokens"),
    (re.compile(r"^reasoning\.effort$"), "reasoning_effort"),
    (re.compile(r"^input$"), "messages"),
)
"""Responses params → chat params (after ``input[N]`` has become its message's)."""
_FIELDS: Final = (
    (".call_id", ".tool_call_id"),
    (".output", ".content"),
    (".arguments", ".function.arguments"),
)
"""Fields of items → the fields of the message parts they came from."""


def _text(content: str | Sequence[TextPart]) -> str:
    return content if isinstance(content, str) else "".join(part.text for part in content)


def _user_parts(content: str | Sequence[object], param: str) -> tuple[InputPart, ...]:
    if isinstance(content, str):
        return (InputText(text=content),)
    parts: list[InputPart] = []
    for index, part in enumerate(content):
        if isinstance(part, TextPart):
            parts.append(InputText(text=part.text))
        elif isinstance(part, ImagePart):
            detail = part.image_url.detail or "auto"
            parts.append(InputImage(image_url=part.image_url.url, detail=detail))
        elif isinstance(part, FilePart):
            source = part.file
            if source.file_data is None and source.file_id is None:
                raise RequestError(
                    f"'{param}[{index}].file' needs 'file_data' or 'file_id'.",
                    param=f"{param}[{index}].file",
                    code="missing_required_parameter",
                )
            parts.append(
                InputFile(file_data=source.file_data, file_id=source.file_id, filename=source.filename)
            )
        elif isinstance(part, AudioPart):
            raise RequestError(
                f"This model does not read audio: 'input_audio' content at '{param}[{index}]' cannot be "
                "given to it.",
                param=f"{param}[{index}]",
                code="unsupported_content",
            )
    return tuple(parts)


def _assistant_parts(message: AssistantMessageParam) -> tuple[OutputPart, ...]:
    content = message.content
    parts: list[OutputPart] = []
    if isinstance(content, str):
        parts.append(OutputText(text=content))
    elif content is not None:
        for part in content:
            if isinstance(part, RefusalPart):
                parts.append(Refusal(refusal=part.refusal))
            elif isinstance(part, TextPart):
                parts.append(OutputText(text=part.text))
    if message.refusal:
        parts.append(Refusal(refusal=message.refusal))
    return tuple(part for part in parts if (part.text if isinstance(part, OutputText) else part.refusal))


def _reasoning(message: AssistantMessageParam, param: str) -> str | None:
    """The reasoning an assistant message carries, by either name (the same text if both)."""
    first, second = message.reasoning_content, message.reasoning
    if first is not None and second is not None and first != second:
        raise RequestError(
            f"'{param}.reasoning_content' and '{param}.reasoning' differ: give the reasoning once.",
            param=f"{param}.reasoning",
            code="invalid_value",
        )
    return first if first is not None else second


def _assistant(message: AssistantMessageParam, param: str) -> list[tuple[InputItem, str]]:
    out: list[tuple[InputItem, str]] = []
    thought = _reasoning(message, param)
    if thought:
        out.append((ReasoningItem(content=(ReasoningText(text=thought),)), param))
    parts = _assistant_parts(message)
    if parts:
        phase: Phase = "commentary" if message.tool_calls else "final_answer"
        out.append((AssistantMessage(content=parts, phase=phase), f"{param}.content"))
    for index, call in enumerate(message.tool_calls):
        item = FunctionCall(call_id=call.id, name=call.function.name, arguments=call.function.arguments)
        out.append((item, f"{param}.tool_calls[{index}]"))
    return out


def _items_of(message: MessageParam, param: str) -> list[tuple[InputItem, str]]:
    """The items of one message, each with the ``param`` it came from."""
    if isinstance(message, SystemMessageParam):
        return [(SystemMessage(content=(InputText(text=_text(message.content)),)), param)]
    if isinstance(message, DeveloperMessageParam):
        return [(DeveloperMessage(content=(InputText(text=_text(message.content)),)), param)]
    if isinstance(message, UserMessageParam):
        content = f"{param}.content"
        return [(UserMessage(content=_user_parts(message.content, content)), param)]
    if isinstance(message, ToolMessageParam):
        output = FunctionCallOutput(call_id=message.tool_call_id, output=_text(message.content))
        return [(output, param)]
    return _assistant(message, param)


def message_items(messages: Sequence[MessageParam]) -> tuple[tuple[InputItem, ...], tuple[str, ...]]:
    """The input items of ``messages``, and for each the ``param`` of the message (or
    message part) it came from. Raises :class:`RequestError` for content no model here
    reads (audio), reasoning given twice with different text, or a file without data."""
    items: list[InputItem] = []
    origins: list[str] = []
    for index, message in enumerate(messages):
        for item, origin in _items_of(message, f"messages[{index}]"):
            items.append(item)
            origins.append(origin)
    return tuple(items), tuple(origins)


def chat_param(param: str | None, origins: Sequence[str]) -> str | None:
    """The chat request's name for ``param``, an error's ``param`` in Responses terms
    (``origins``: the ``param`` each input item came from, see :func:`message_items`)."""
    if param is None:
        return None
    match = _INPUT.match(param)
    if match is not None:
        index = int(match.group(1))
        if index >= len(origins):
            return "messages"
        rest = param[match.end() :]
        origin = origins[index]
        for field_name, chat_name in _FIELDS:
            if rest.startswith(field_name):
                rest = chat_name + rest[len(field_name) :]
                break
        if rest.startswith(".content") and origin.endswith(".content"):
            rest = rest[len(".content") :]
        return origin + rest
    for pattern, replacement in _RENAMED:
        renamed = pattern.sub(replacement, param, count=1)
        if renamed != param:
            return renamed
    return param


def chat_error(error: RequestError, origins: Sequence[str]) -> RequestError:
    """``error`` with its ``param`` (and the message's mention of it) in chat terms."""
    renamed = chat_param(error.param, origins)
    if renamed is not None and error.param is not None and renamed != error.param:
        error.message = error.message.replace(f"'{error.param}'", f"'{renamed}'")
        error.args = (error.message,)
        error.param = renamed
    return error
