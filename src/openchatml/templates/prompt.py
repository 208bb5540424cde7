"""From OpenChatML conversations to a chat template's prompt, and the text a prompt already
wrote of the assistant message being generated.

:func:`template_messages` projects a conversation onto the message dicts Hugging Face chat
templates read (``role``, ``content``, ``reasoning_content``, ``tool_calls``,
``tool_call_id``) and the OpenAI-style tools list; :func:`render_prompt` renders them,
with thinking on, off or at an effort through the template's own switch
(:func:`thinking_variables`: ``enable_thinking``, ``reasoning_effort``,
``thinking_budget`` … as analysis found it).

:func:`output_prefix` says where a model's output starts inside its own message: the text
after the assistant's role header that the prompt already holds (``"<think>\\n"`` for a
template whose generation prompt opens the reasoning; the partial message itself when the
final message is continued). A parser reads ``prefix + output``. It is found by rendering
and diffing, never by the template's name:

* the generation prompt is what ``add_generation_prompt`` adds to the render;
* the role header (:func:`role_header`) is what the generation prompts of a probe
  conversation (thinking left alone, on, off) share, cut where the user's header ends too:
  a user turn's header and the assistant's end the same way (``<|end_header_id|>\\n\\n``,
  ``<|im_middle|>``, ``_TOKEN|>``, ``\\n``); what follows (``>>>``, ``<think>\\n``) is
  already the message;
* a continued final message is rendered with a tag after the text being continued and cut
  there (as transformers does); the prefix is that render's last message after its header.
  Where the template does not write the final message's reasoning, the reasoning is
  written between the template's reasoning markers (given by the caller, from analysis).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from ..core._json import plain
from ..core.content import (
    DEFAULT_IDENTITY,
    DeveloperContent,
    SystemContent,
    TextContent,
    response_formats_section,
)
from ..core.messages import Conversation, Message, Role
from .analysis import analyze_source
from .environment import REASONING_FIELDS, ChatTemplate
from .errors import TemplateRenderError
from .format import ReasoningFormat

Thinking = bool | str | None
"""A wish about thinking: ``None`` (the template's default), ``True`` / ``False``, or an
effort — Open Responses' ``none``, ``minimal``, ``low``, ``medium``, ``high``, ``xhigh``,
or one of the template's own values (``no_think``)."""

FUNCTIONS_NAMESPACE: Final = "functions"

_CONTINUE_TAG: Final = "CONTINUE_FINAL_MESSAGE_TAG "
_PROBE: Final = ("OCMPROBEUSERONE", "OCMPROBEASSISTANT", "OCMPROBEUSERTWO")
_PROBE_REASONING: Final = "OCMPROBEREASONING"


# --- OpenChatML → template messages ------------------------------------------------------


def _text_of(message: Message) -> str:
    parts: list[str] = []
    for part in message.content:
        if isinstance(part, TextContent):
            parts.append(part.text)
        elif isinstance(part, SystemContent):
            if part.model_identity is not None and part.model_identity != DEFAULT_IDENTITY:
                parts.append(part.model_identity)
        elif isinstance(part, DeveloperContent):
            if part.instructions:
                parts.append(part.instructions)
            if part.response_formats:
                parts.append(response_formats_section(part.response_formats))
    return "\n\n".join(p for p in parts if p)


def _tool_name(recipient: str) -> str:
    namespace, _, name = recipient.partition(".")
    return name if namespace == FUNCTIONS_NAMESPACE and name else recipient


def _tools_of(messages: Sequence[Message]) -> list[dict[str, Any]] | None:
    found: list[dict[str, Any]] | None = None
    for message in messages:
        for part in message.content:
            if isinstance(part, DeveloperContent | SystemContent) and part.tools:
                namespace = part.tools.get(FUNCTIONS_NAMESPACE)
                if namespace is None:
                    continue
                found = [
                    {
                        "type": "function",
                        "function": {
                            "name": tool.name,
                            "description": tool.description,
                            "parameters": plain(tool.parameters)
                            if tool.parameters is not None
                            else {"type": "object", "properties": {}},
                        },
                    }
                    for tool in namespace.tools
                ]
    return found


class _HFMessages:
    """Groups consecutive OpenChatML assistant messages into HF assistant messages."""

    def __init__(self) -> None:
        self.out: list[dict[str, Any]] = []
        self.current: dict[str, Any] | None = None
        self.reasoning: list[str] = []
        self.open_calls: list[tuple[str, str]] = []  # (name, id) of calls not yet answered
        self.generated = 0

    def _assistant(self) -> dict[str, Any]:
        if self.current is None:
            self.current = {"role": "assistant", "content": ""}
            self.out.append(self.current)
        if self.reasoning:
            self.current["reasoning_content"] = "\n".join(self.reasoning)
            self.reasoning = []
        return self.current

    def close(self) -> None:
        if self.reasoning:  # reasoning that no answer or call followed
            self.current = None
            self._assistant()
        self.current = None

    def analysis(self, text: str) -> None:
        if self.current is not None and (self.current["content"] or self.current.get("tool_calls")):
            self.current = None
        self.reasoning.append(text)

    def content(self, text: str) -> None:
        if self.current is not None and self.current.get("tool_calls"):
            self.current = None
        message = self._assistant()
        message["content"] = f"{message['content']}\n{text}" if message["content"] else text

    def call(self, message: Message) -> None:
        name = _tool_name(message.recipient or "")
        call_id = message.call_id
        if call_id is None:
            self.generated += 1
            call_id = f"call{self.generated:05d}"
        self.open_calls.append((name, call_id))
        target = self._assistant()
        target.setdefault("tool_calls", []).append(
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": message.text}}
        )

    def result(self, message: Message) -> None:
        self.close()
        name = _tool_name(message.name or "")
        call_id = message.call_id
        if call_id is None:
            call_id = next((cid for n, cid in self.open_calls if n == name), None)
        self.open_calls = [(n, cid) for n, cid in self.open_calls if cid != call_id]
        entry: dict[str, Any] = {"role": "tool", "content": message.text, "name": name}
        if call_id is not None:
            entry["tool_call_id"] = call_id
        self.out.append(entry)

    def other(self, entry: dict[str, Any]) -> None:
        self.close()
        self.out.append(entry)


def template_messages(
    conversation: Conversation | Sequence[Message],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """``conversation`` as HF message dicts, and its function tools OpenAI-style (``None``
    when it declares none).

    * The system and developer messages before the first other message become one
      ``system`` message, their texts joined by a blank line: the developer's instructions
      and response formats, and a system message's text (a Harmony ``SystemContent`` gives
      only a model identity of its own, not gpt-oss's default one). Later ones stay
      ``system`` messages where they are.
    * User messages → ``user``.
    * Consecutive assistant messages make one ``assistant`` message: ``analysis`` text is its
      ``reasoning_content``, ``final`` and ``commentary`` text its ``content``, calls
      (a recipient such as ``functions.get_weather``) its ``tool_calls``
      (``{"id", "type": "function", "function": {"name", "arguments"}}`` with the JSON text
      of the arguments; a call without an id gets ``call00001``, ``call00002`` …, the
      nine-character form some templates insist on). Reasoning after an answer or a call
      starts a new assistant message.
    * Tool results → ``{"role": "tool", "tool_call_id", "name", "content"}``; a result
      without a call id answers the last open call of that tool.
    * The tools are those of the ``functions`` namespace (the last declaration wins), as
      ``{"type": "function", "function": {"name", "description", "parameters"}}``.
    """
    messages = list(conversation)
    builder = _HFMessages()
    system_texts: list[str] = []
    leading = True
    for message in messages:
        role = message.role
        if role in (Role.SYSTEM, Role.DEVELOPER):
            text = _text_of(message)
            if leading:
                if text:
                    system_texts.append(text)
            elif text:
                builder.other({"role": "system", "content": text})
            continue
        if leading:
            leading = False
            if system_texts:
                builder.out.append({"role": "system", "content": "\n\n".join(system_texts)})
        if role is Role.USER:
            builder.other({"role": "user", "content": message.text})
        elif role is Role.TOOL:
            builder.result(message)
        elif message.recipient is not None and message.recipient != "all":
            builder.call(message)
        elif message.channel == "analysis":
            builder.analysis(message.text)
        else:
            builder.content(message.text)
    if leading and system_texts:
        builder.out.append({"role": "system", "content": "\n\n".join(system_texts)})
    builder.close()
    return builder.out, _tools_of(messages)


# --- thinking: the template's own switch ----------------------------------------------

_EFFORT_RANKS: Final = {"none": 0, "minimal": 1, "low": 2, "medium": 3, "high": 4, "xhigh": 5}
_OFF: Final = ("none", "minimal")


def thinking_variables(reasoning: ReasoningFormat, thinking: Thinking) -> dict[str, Any]:
    """The template variables that grant ``thinking`` through the template's switch
    (``reasoning.switch``, from analysis): ``{}`` for ``None`` or a template without one.

    ``True`` sets the switch's ``on`` value and ``False`` its ``off`` value. An effort
    that is one of the switch's own values is passed as it is (``"low"``, ``"no_think"``);
    otherwise ``none`` and ``minimal`` are off, and the other efforts on — the nearest of
    the switch's effort levels where it takes levels (between two, the higher). A switch
    that cannot be turned off gets its least effort for off. Raises :class:`ValueError`
    for a string that is neither an effort nor one of the switch's values.
    """
    if thinking is None or not reasoning.switch:
        return {}
    name = reasoning.switch
    if isinstance(thinking, str):
        own = [v for v in (reasoning.on, reasoning.off, *reasoning.efforts) if isinstance(v, str)]
        if thinking in own:
            return {name: thinking}
        rank = _EFFORT_RANKS.get(thinking.lower())
        if rank is None:
            raise ValueError(
                f"thinking: {thinking!r} is not an effort ({', '.join(_EFFORT_RANKS)}) nor a value "
                f"of the template's {name!r} ({', '.join(map(repr, own))})"
            )
        if thinking.lower() not in _OFF:
            levels = [(e, _EFFORT_RANKS[e.lower()]) for e in reasoning.efforts if e.lower() in _EFFORT_RANKS]
            if levels:
                best = min(levels, key=lambda level: (abs(level[1] - rank), -level[1]))
                return {name: best[0]}
            return {name: reasoning.on}
        thinking = False
    if thinking:
        return {name: reasoning.on}
    if reasoning.off is not None:
        return {name: reasoning.off}
    return {name: reasoning.efforts[0]} if reasoning.efforts else {}


def _reasoning_of_template(template: ChatTemplate) -> ReasoningFormat:
    """The template's reasoning format, by analysis (cached by the template's text)."""
    return analyze_source(template.source, name=template.name).reasoning


def render_prompt(
    template: ChatTemplate,
    conversation: Conversation | Sequence[Message],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    add_generation_prompt: bool = True,
    thinking: Thinking = None,
    reasoning: ReasoningFormat | None = None,
    hf_messages: Sequence[Mapping[str, Any]] | None = None,
    **variables: Any,
) -> str:
    """The prompt text of ``conversation`` under ``template``.

    ``tools`` replaces the tools the conversation declares. ``thinking`` sets the
    template's own thinking switch (see :func:`thinking_variables`; ``None``: the
    template's default); ``reasoning`` is the template's reasoning format from analysis
    (without it, the template is analysed when ``thinking`` is given). ``variables``
    reach the template as they are and win over the switch (``enable_thinking=False``).
    A Harmony ``SystemContent``'s reasoning effort reaches templates that read
    ``reasoning_effort``, unless that is the switch or ``variables`` set it.
    ``hf_messages`` are rendered instead of the conversation's own messages (its tools
    and settings still apply). Raises :class:`TemplateRenderError`, and
    :class:`ValueError` for a ``thinking`` that is no effort.
    """
    messages, declared = template_messages(conversation)
    if hf_messages is not None:
        messages = [dict(m) for m in hf_messages]
    if thinking is not None:
        reasoning = reasoning if reasoning is not None else _reasoning_of_template(template)
        variables = {**thinking_variables(reasoning, thinking), **variables}
    if "reasoning_effort" in template.variables and "reasoning_effort" not in variables:
        effort = next(
            (
                part.reasoning_effort
                for message in conversation
                for part in message.content
                if isinstance(part, SystemContent) and part.reasoning_effort is not None
            ),
            None,
        )
        if effort is not None:
            switch = (reasoning if reasoning is not None else _reasoning_of_template(template)).switch
            if switch != "reasoning_effort":  # the switch's default is the template's
                variables["reasoning_effort"] = str(effort)
    return template.render(
        messages,
        tools=tools if tools is not None else declared,
        add_generation_prompt=add_generation_prompt,
        **variables,
    )


# --- the text the prompt already wrote of the assistant's message ------------------------


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _generation_prompt(
    template: ChatTemplate, messages: Sequence[Mapping[str, Any]], tools: Any, variables: Mapping[str, Any]
) -> str:
    """What ``add_generation_prompt`` adds to the render of ``messages``."""
    with_prompt = template.render(messages, tools=tools, add_generation_prompt=True, **variables)
    without = template.render(messages, tools=tools, add_generation_prompt=False, **variables)
    return with_prompt[_common_prefix(with_prompt, without) :]


def role_header(template: ChatTemplate, *, tools: Any = None, **variables: Any) -> str:
    """The assistant's role header (``<|im_start|>assistant\\n``, ``<｜Assistant｜>``; ``""``
    for templates that end the user's turn instead).

    The generation prompts of a probe conversation (thinking as ``variables`` say, on and
    off) share the header and whatever every answer opens with (``<think>``, ``>>>``); the
    header ends where the user's header ends too: after the longest end of the text between
    an assistant's content and the next user's (``<|end_header_id|>\\n\\n``, ``｜>``,
    ``\\n``) found past the part both headers start with. Raises
    :class:`TemplateRenderError` when not even the probe renders.
    """
    user1, assistant, user2 = _PROBE
    first = [{"role": "user", "content": user1}]
    prompts: list[str] = []
    failure: TemplateRenderError | None = None
    for extra in ({}, {"enable_thinking": True}, {"enable_thinking": False}):
        try:
            prompts.append(_generation_prompt(template, first, tools, {**variables, **extra}))
        except TemplateRenderError as exc:
            failure = failure or exc
    if not prompts:
        assert failure is not None
        raise failure
    common = prompts[0]
    for prompt in prompts[1:]:
        common = common[: _common_prefix(common, prompt)]
    probe = [*first, {"role": "assistant", "content": assistant}, {"role": "user", "content": user2}]
    try:
        text = template.render(probe, tools=tools, add_generation_prompt=False, **variables)
    except TemplateRenderError:
        return common
    at = text.find(assistant)
    end = text.find(user2, at + len(assistant)) if at >= 0 else -1
    if end < 0:
        return common
    user_side = text[at + len(assistant) : end]  # the assistant's end and the user's header
    start = 0
    while start < len(common) and common[: start + 1] in user_side:
        start += 1
    for size in range(len(user_side), 0, -1):
        found = common.find(user_side[-size:], start)
        if found >= 0:
            return common[: found + size]
    return common


def _message_start(text: str, at: int, header: str) -> int:
    """Where the message whose render starts near ``at`` in ``text`` begins: ``at``, or the
    start of the header that ``at`` fell inside (a diff may run into the header when the
    text before shares its first characters)."""
    if header and not text.startswith(header, at):
        found = text.rfind(header, 0, at + len(header))
        if found >= 0 and at - found < len(header):
            return found
    return at


def _without_header(header: str, text: str) -> str:
    if text.startswith(header):
        return text[len(header) :]
    return text[_common_prefix(header, text) :]


def output_prefix(
    template: ChatTemplate,
    messages: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    add_generation_prompt: bool = True,
    continue_final_message: bool | Literal["content", "reasoning"] = False,
    reasoning_markers: tuple[str, str] | None = None,
    **variables: Any,
) -> str:
    """The text the prompt already wrote of the assistant message being generated, after
    its role header (:func:`role_header`): what a parser of the model's output must start
    from.

    ``messages`` are HF message dicts. Without ``continue_final_message``, it is the part of
    the generation prompt after the header (``""`` without a generation prompt). With it,
    the final message is a partial assistant message the model continues, and the prefix
    is its render up to the text being continued: its ``content`` (``"content"``), its
    reasoning (``"reasoning"``), or with ``True`` the content if it has any, else the
    reasoning. ``reasoning_markers`` (start, end) are the template's reasoning markers
    (from analysis): where a template does not render the final message's reasoning, the
    reasoning is written between them before the content, as such models write it.

    Raises :class:`TemplateRenderError` when the template refuses the messages, or does not
    render the text to continue.
    """
    tool_list = list(tools) if tools is not None else None
    if not continue_final_message:
        if not add_generation_prompt:
            return ""
        with_prompt = template.render(messages, tools=tool_list, add_generation_prompt=True, **variables)
        without = template.render(messages, tools=tool_list, add_generation_prompt=False, **variables)
        at = _common_prefix(with_prompt, without)
        if at == len(with_prompt):
            return ""
        header = role_header(template, tools=tool_list, **variables)
        return _without_header(header, with_prompt[_message_start(with_prompt, at, header) :])
    return _continued_prefix(
        template, messages, tool_list, continue_final_message, reasoning_markers, variables
    )


def _reasoning_of(message: Mapping[str, Any]) -> str | None:
    return next((str(message[k]) for k in REASONING_FIELDS if message.get(k) is not None), None)


def _continued_prefix(
    template: ChatTemplate,
    messages: Sequence[Mapping[str, Any]],
    tools: Any,
    mode: bool | str,
    markers: tuple[str, str] | None,
    variables: dict[str, Any],
) -> str:
    if not messages:
        raise TemplateRenderError(f"{template.name}: continue_final_message needs a final message")
    final = {k: v for k, v in messages[-1].items() if k not in REASONING_FIELDS}
    earlier = list(messages[:-1])
    content = final.get("content")
    content = "" if content is None else content
    if not isinstance(content, str):
        raise TemplateRenderError(f"{template.name}: continue_final_message needs text content")
    reasoning = _reasoning_of(messages[-1])
    field = mode if isinstance(mode, str) else ("content" if content or reasoning is None else "reasoning")
    if field not in ("content", "reasoning"):
        raise TemplateRenderError(f"{template.name}: cannot continue {field!r} (content or reasoning)")
    if field == "reasoning" and reasoning is None:
        raise TemplateRenderError(f"{template.name}: the final message has no reasoning to continue")
    variables = {**variables, "continue_final_message": True}
    header = role_header(template, tools=tools, **variables)
    try:
        base = (
            template.render(earlier, tools=tools, add_generation_prompt=False, **variables) if earlier else ""
        )
    except TemplateRenderError:
        base = ""

    def segment(message: Mapping[str, Any]) -> str | None:
        """The final ``message``'s render after its header, up to the continue tag."""
        rendered = template.render([*earlier, message], tools=tools, add_generation_prompt=False, **variables)
        at = rendered.rfind(_CONTINUE_TAG.strip())
        if at < 0:
            return None
        cut = rendered[:at]
        return _without_header(header, cut[_message_start(cut, _common_prefix(cut, base), header) :])

    def opening() -> str:
        """What the generation prompt writes after the header."""
        try:
            found = _generation_prompt(template, earlier, tools, variables) if earlier else ""
        except TemplateRenderError:
            return ""
        return _without_header(header, found) if found else ""

    if field == "content":
        tagged = {**final, "content": content + _CONTINUE_TAG}
        if (
            reasoning
            and markers is not None
            and not _renders_reasoning(template, earlier, tagged, tools, variables)
        ):
            return _written_reasoning(segment, final, reasoning, markers, opening(), continued=False)
        if reasoning:
            tagged.update(dict.fromkeys(REASONING_FIELDS, reasoning))
        found = segment(tagged)
        if found is None:
            raise TemplateRenderError(
                f"{template.name}: the final message's content does not appear in the render, "
                "so it cannot be continued"
            )
        return found
    assert reasoning is not None
    try:
        found = segment({**final, **dict.fromkeys(REASONING_FIELDS, reasoning + _CONTINUE_TAG)})
    except TemplateRenderError:
        if markers is None:
            raise
        found = None
    if found is not None:
        return found
    if markers is None:
        raise TemplateRenderError(
            f"{template.name}: the template does not render the final message's reasoning; "
            "give its reasoning markers to continue it"
        )
    return _written_reasoning(segment, final, reasoning, markers, opening(), continued=True)


def _renders_reasoning(
    template: ChatTemplate,
    earlier: Sequence[Mapping[str, Any]],
    message: Mapping[str, Any],
    tools: Any,
    variables: Mapping[str, Any],
) -> bool:
    """Whether the template writes ``message``'s reasoning when it is the final message."""
    probe = {**message, **dict.fromkeys(REASONING_FIELDS, _PROBE_REASONING)}
    try:
        rendered = template.render([*earlier, probe], tools=tools, add_generation_prompt=False, **variables)
    except TemplateRenderError:
        return False
    return _PROBE_REASONING in rendered


def _written_reasoning(
    segment: Any,
    final: Mapping[str, Any],
    reasoning: str,
    markers: tuple[str, str],
    opening: str,
    *,
    continued: bool,
) -> str:
    """The prefix of a final message whose reasoning the template does not render: the
    reasoning is written between ``markers`` where the model writes it, before the content
    (or, ``continued``, the reasoning is the text being continued). ``opening`` is what the
    generation prompt writes after the header."""
    start, end = markers
    content = final.get("content") or ""
    try:
        rest = segment({**final, "content": ("" if continued else content) + _CONTINUE_TAG}) or ""
    except TemplateRenderError:
        rest = ""
    if start and end:  # the template writes an empty reasoning block: fill it
        empty = re.search(re.escape(start) + r"\s*" + re.escape(end), rest)
        if empty is not None:
            head = rest[: empty.start()] + start + reasoning
            return head if continued else head + end + rest[empty.end() :]
    if start and opening.rstrip().endswith(start.strip()):  # the generation prompt opened it
        if rest.startswith(opening):
            rest = rest[len(opening) :]
        head = opening + reasoning
    else:
        head = start + reasoning
    return head if continued else head + end + rest
