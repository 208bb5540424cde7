"""Custom tools as the model sees them: offered, called and read back, in each dialect.

A custom tool (:class:`~.wire.tools.CustomTool`) takes raw text, not JSON arguments: free
text, or text in the language of its grammar.

* Harmony (gpt-oss): it is offered in the ``functions`` namespace as a function of one
  string, ``type apply_patch = (_: string) => any;``, its description saying that the
  input is free text or giving the grammar the input follows (:func:`harmony_tool`). A call
  is a ``commentary`` message to ``functions.NAME`` (``NAMESPACE.NAME`` for a tool of a
  namespace) whose body is the raw input, with no ``<|constrain|>json``
  (:func:`custom_call`; :func:`is_custom_call` tells one apart from a function call in a
  conversation built from items).
* A chat template: it is offered as a function of one string argument ``input``
  (:func:`template_tool`), and its calls carry ``{"input": TEXT}`` as JSON arguments:
  :func:`with_input_arguments` writes a conversation's custom calls so, and
  :class:`InputArgument` reads the text back from the arguments a model streams.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Final

from ..core.content import ToolDescription
from ..core.messages import Conversation, Message, Role
from ..templates.parsing.lexer import (
    T_CLOSE,
    T_COLON,
    T_COMMA,
    T_OPEN,
    T_STR,
    T_STR_BEGIN,
    T_STR_END,
    Lexer,
)
from .wire.tools import CustomTool

INPUT: Final = "input"
"""The one argument of a custom tool offered to a chat-template model as a function."""
FUNCTIONS: Final = "functions."
"""What the recipient of a call of a function or custom tool starts with."""
STRING: Final = {"type": "string"}
"""The parameters of a custom tool offered to gpt-oss: one string (its raw input)."""
_LANGUAGES: Final = {"lark": "Lark grammar", "regex": "regular expression"}


def harmony_tool(tool: CustomTool) -> ToolDescription:
    """``tool`` as gpt-oss reads it in the ``functions`` namespace: a function of one
    string, its description followed by what the input is: free text, or text of the
    grammar (its definition given), written as it is (not JSON)."""
    grammar = tool.grammar
    if grammar is None:
        note = "The input is free text, written as it is (not JSON)."
    else:
        language = _LANGUAGES[grammar.syntax]
        note = f"The input is text in the language of this {language}, written as it is (not JSON):"
        note = f"{note}\n{grammar.definition}"
    description = "\n\n".join(part for part in (tool.description, note) if part)
    return ToolDescription(tool.name, description, dict(STRING))


def template_tool(
    tool: CustomTool, *, name: str | None = None, description: str | None = None
) -> dict[str, Any]:
    """``tool`` as a chat template reads it: an OpenAI-style function of one string
    argument ``input`` (described by the grammar, if the input follows one), named
    ``name`` and described by ``description`` (default: the tool's)."""
    argument: dict[str, Any] = dict(STRING)
    grammar = tool.grammar
    if grammar is not None:
        argument["description"] = (
            f"Text in the language of this {_LANGUAGES[grammar.syntax]}:\n{grammar.definition}"
        )
    parameters = {
        "type": "object",
        "properties": {INPUT: argument},
        "required": [INPUT],
        "additionalProperties": False,
    }
    function = {
        "name": name or tool.name,
        "description": (tool.description or "") if description is None else description,
        "parameters": parameters,
    }
    return {"type": "function", "function": function}


def custom_call(name: str, text: str, call_id: str | None, namespace: str | None = None) -> Message:
    """The Harmony message of a call of custom tool ``name`` (of ``namespace``) with input
    ``text``: ``commentary`` to ``functions.NAME`` (``NAMESPACE.NAME``), the raw text, no
    content type."""
    recipient = f"{namespace}.{name}" if namespace else f"{FUNCTIONS}{name}"
    return Message.tool_call(recipient, text, call_id=call_id, content_type=None)


def is_custom_call(message: Message) -> bool:
    """Whether ``message`` is a custom call as :func:`custom_call` writes it: an assistant
    call (of ``functions.NAME`` or ``NAMESPACE.NAME``) without a content type (a function
    call's is ``json``)."""
    return (
        message.role is Role.ASSISTANT
        and message.recipient not in (None, "all")
        and message.content_type is None
    )


def with_input_arguments(conversation: Conversation) -> Conversation:
    """``conversation`` with every custom call carrying ``{"input": TEXT}`` as JSON
    arguments (``<|constrain|>json``), as a chat-template model's function calls do."""
    messages = tuple(
        Message.tool_call(
            m.recipient or "",
            json.dumps({INPUT: m.text}, ensure_ascii=False),
            call_id=m.call_id,
            channel=m.channel or "commentary",
        )
        if is_custom_call(m)
        else m
        for m in conversation
    )
    return replace(conversation, messages=messages)


def input_of(arguments: str) -> str:
    """The input of a custom call from the whole of its JSON ``arguments``: the string
    ``input``; else the one string a single-key object holds, a JSON string's text; else
    the arguments as they are."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(value, dict):
        if isinstance(value.get(INPUT), str):
            return str(value[INPUT])
        if len(value) == 1 and isinstance(next(iter(value.values())), str):
            return str(next(iter(value.values())))
    return value if isinstance(value, str) else arguments


class InputArgument:
    """Reads the ``input`` argument's text (or that of the string argument ``name``) out of
    JSON arguments arriving in pieces (``{"input": "*** Begin Patch\\n…"}``): :meth:`feed`
    gives the text of the input
    decoded from each piece (escapes resolved) as soon as it is certain; :meth:`close`
    gives the whole input: the string's text (so far, where the arguments were cut
    short), or :func:`input_of` the arguments where they held no string ``input``."""

    def __init__(self, name: str = INPUT) -> None:
        self._name = name
        self._lexer = Lexer()
        self._buffer = ""  # text the lexer has not read yet
        self._arguments: list[str] = []
        self._read = 0  # tokens of the lexer handled
        self._depth = 0
        self._in_value = False  # after a top-level key's colon
        self._key: list[str] = []
        self._streaming = False  # the input's value is being read
        self._began = False  # the input's string has begun
        self.complete = False
        """Whether the input's string has ended."""
        self.text: list[str] = []
        """The input's text so far."""

    def feed(self, piece: str) -> str:
        """More arguments; returns the input's text they add (maybe empty)."""
        self._arguments.append(piece)
        return self._run(self._buffer + piece, final=False)

    def close(self) -> str:
        """The whole input, once every piece has been fed."""
        self._run(self._buffer, final=True)
        if self._began:
            return "".join(self.text)
        return input_of("".join(self._arguments))

    def _run(self, buffer: str, *, final: bool) -> str:
        lexer = self._lexer
        stop = lexer.run(buffer, 0, final)
        self._buffer = buffer[stop:]
        added: list[str] = []
        tokens = lexer.tokens
        for kind, value in tokens[self._read :]:
            self._token(kind, value, added)
        self._read = len(tokens)
        self.text += added
        return "".join(added)

    def _token(self, kind: int, value: str, added: list[str]) -> None:
        if kind == T_OPEN:
            self._depth += 1
        elif kind == T_CLOSE:
            self._depth -= 1
        elif self._depth != 1 or self.complete:
            return
        elif kind == T_COLON:
            self._in_value = True
            self._streaming = "".join(self._key) == self._name
        elif kind == T_COMMA:
            self._in_value, self._streaming, self._key = False, False, []
        elif kind == T_STR_BEGIN and self._streaming:
            self._began = True
        elif kind == T_STR and self._streaming:
            added.append(value)
        elif kind == T_STR_END and self._streaming:
            self.complete = True
        elif not self._in_value and kind != T_STR_END:
            self._key.append(value.strip("\"'") if kind != T_STR else value)
