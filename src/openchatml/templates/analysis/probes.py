"""The probe conversations and their renders.

Every probe is a short conversation (a user message, then the assistant message under
study) rendered through the template; only the text after the user message (its *tail*)
is looked at. The messages hold needles with unlikely spellings (``ANSWERTEXT``,
``THOUGHTTEXT``, tool ``foofoo``/``barbar``, argument ``first``, value ``XXXX``, id
``call00001`` …), so that each part of a format is the text the template writes around
them. A probe the template refuses (``raise_exception``) renders as ``None``."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..environment import ChatTemplate
from ..errors import TemplateError

USER = "USERMSG"
USER2 = "USERTWO"
SYSTEM = "SYSTEMMSG"
ANSWER = "ANSWERTEXT"
OTHER = "OTHERTEXT"
THOUGHT = "THOUGHTTEXT"
NAME1, NAME2 = "foofoo", "barbar"
ID1, ID2 = "call00001", "call99999"
ARG1, ARG2 = "first", "second"
VAL1, VAL2, VAL3 = "XXXX", "YYYY", "ZZZZ"
INT_VALUE = 1234
MARKUP_VALUE = "MM<b>&\nNN"
TOOL_RESULT = "RESULTTEXT"

ProbeMessage = dict[str, Any]
"""A message (or a tool) as a template receives it: plain JSON data."""


def user_message(text: str = USER) -> ProbeMessage:
    """A user message holding ``text``."""
    return {"role": "user", "content": text}


def assistant_message(content: Any, **extra: Any) -> ProbeMessage:
    """An assistant message with ``content`` and the fields ``extra`` (``tool_calls`` …)."""
    return {"role": "assistant", "content": content, **extra}


def tool_call(name: str, args: Mapping[str, Any], call_id: str, as_string: bool) -> ProbeMessage:
    """A call of tool ``name``; its arguments a dict, or a JSON string if ``as_string``."""
    arguments: Any = json.dumps(args, ensure_ascii=False) if as_string else dict(args)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool_spec(name: str, props: Mapping[str, str]) -> ProbeMessage:
    """A function tool ``name`` whose arguments ``props`` (name → JSON type) are required."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {
                "type": "object",
                "properties": {k: {"type": t, "description": f"The {k} argument."} for k, t in props.items()},
                "required": list(props),
            },
        },
    }


STRING_TOOLS = [
    tool_spec(NAME1, {ARG1: "string", ARG2: "string"}),
    tool_spec(NAME2, {ARG1: "string", ARG2: "string"}),
]
INT_TOOLS = [
    tool_spec(NAME1, {ARG1: "integer", ARG2: "string"}),
    tool_spec(NAME2, {ARG1: "integer", ARG2: "string"}),
]


def tail_of(text: str | None, needle: str = USER) -> str | None:
    """What follows the last ``needle`` (the user message) in a render, or ``None``."""
    if text is None:
        return None
    i = text.rfind(needle)
    return None if i == -1 else text[i + len(needle) :]


class ProbeRenderer:
    """Renders probes through one template, memoised (a template may change the messages
    it is given, so each render gets copies); a refused render is ``None`` and its error
    is kept in :attr:`errors`. Probes follow :attr:`base`, the conversation up to the
    user message."""

    def __init__(self, template: ChatTemplate) -> None:
        self.template = template
        self.base: list[ProbeMessage] = [user_message()]
        self.errors: list[str] = []
        self._cache: dict[str, str | None] = {}

    def render(
        self,
        messages: Sequence[ProbeMessage],
        *,
        tools: Sequence[ProbeMessage] | None = None,
        gen: bool = False,
        **variables: Any,
    ) -> str | None:
        """The template's text for ``messages`` (``gen``: with a generation prompt), or
        ``None`` where the template refuses them."""
        key = repr((messages, tools, gen, sorted(variables.items())))
        if key in self._cache:
            return self._cache[key]
        try:
            out: str | None = self.template.render(
                copy.deepcopy(list(messages)),
                tools=copy.deepcopy(list(tools)) if tools is not None else None,
                add_generation_prompt=gen,
                **variables,
            )
        except TemplateError as exc:
            out = None
            self.errors.append(str(exc))
        self._cache[key] = out
        return out

    def tail(
        self,
        *messages: ProbeMessage,
        tools: Sequence[ProbeMessage] | None = None,
        gen: bool = False,
        **variables: Any,
    ) -> str | None:
        """The tail of the base conversation followed by ``messages``."""
        return tail_of(self.render([*self.base, *messages], tools=tools, gen=gen, **variables))

    def find_base(self) -> bool:
        """Choose the base conversation: a user message, else a system message and a user
        message; ``False`` when neither renders."""
        if self.render(self.base) is not None:
            return True
        self.base = [{"role": "system", "content": SYSTEM}, user_message()]
        return self.render(self.base) is not None

    def last_error(self) -> str:
        """What the template said when it last refused a probe."""
        return self.errors[-1] if self.errors else "the answer is dropped"


@dataclass(frozen=True, slots=True)
class ToolCallProbes:
    """The tails of the tool-call probes, with the message shape they rendered with:
    ``one`` call, ``two`` calls, one call ``followed`` by its result, a ``pair`` of
    arguments, a ``typed`` (integer) argument, a ``markup`` value (``MM<b>&\\nNN``)."""

    as_string: bool
    content: Any
    one: str
    two: str | None
    followed: str | None
    pair: str | None
    typed: str | None
    markup: str | None


def render_tool_probes(renderer: ProbeRenderer) -> ToolCallProbes | None:
    """The tool-call probes, rendered with the first message shape the template writes
    calls for (content ``None`` or ``""``, arguments a dict or a JSON string); ``None``
    when the template writes no call."""
    one_arg = {ARG1: VAL1}
    result = {"role": "tool", "tool_call_id": ID1, "name": NAME1, "content": TOOL_RESULT}
    tail = renderer.tail
    for content in (None, ""):
        for as_string in (False, True):
            call = functools.partial(tool_call, as_string=as_string)

            def msg(*calls: ProbeMessage, content: Any = content) -> ProbeMessage:
                return assistant_message(content, tool_calls=list(calls))

            one = tail(msg(call(NAME1, one_arg, ID1)), tools=STRING_TOOLS)
            if one is None or NAME1 not in one:
                continue
            if not as_string and "{'" in one:
                continue  # a dict written with str(): the template wants a JSON string
            if "None" in one:
                continue  # content None written as text
            two = tail(msg(call(NAME1, one_arg, ID1), call(NAME2, {ARG1: VAL2}, ID2)), tools=STRING_TOOLS)
            return ToolCallProbes(
                as_string=as_string,
                content=content,
                one=one,
                two=two if two is not None and NAME1 in two and NAME2 in two else None,
                followed=tail(msg(call(NAME1, one_arg, ID1)), result, tools=STRING_TOOLS),
                pair=tail(msg(call(NAME1, {ARG1: VAL1, ARG2: VAL3}, ID1)), tools=STRING_TOOLS),
                typed=tail(msg(call(NAME1, {ARG1: INT_VALUE}, ID1)), tools=INT_TOOLS),
                markup=tail(msg(call(NAME1, {ARG1: MARKUP_VALUE}, ID1)), tools=STRING_TOOLS),
            )
    return None
