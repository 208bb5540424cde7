"""The events of a call of a tool the client runs, as the model writes its JSON arguments.

Theory of operation. The response's event builder gives each such call a
:class:`ClientCallWriter` and feeds it the arguments as they arrive:

* a ``shell`` call opens at once (``output_item.added`` with no command yet), then each
  string of its ``commands`` array streams as OpenAI's API streams it —
  ``shell_call_command.added`` (empty), ``.delta`` per piece, ``.done`` — read out of the
  JSON as it comes (:class:`CommandsReader`);
* a ``local_shell`` or ``apply_patch`` call, which OpenAI's API streams no event of, shows
  once its arguments are complete and read into its item: ``output_item.added`` then
  ``.done``;
* a held call (a refused one, or any over an engine that does not enforce the request's
  grammar) shows nothing until it is complete and read, then as the last case, or never.

:meth:`ClientCallWriter.close` reads the whole arguments into the item
(:func:`~.client_tools.client_call`). A call whose arguments do not make its item, or that
the call rules refuse, never reaches the client as a finished call: a held one is dropped,
a streamed ``shell`` call ends ``incomplete`` with the commands read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

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
from .client_tools import client_call, function_of
from .wire.event_base import StreamEvent
from .wire.events import (
    OutputItemAdded,
    OutputItemDone,
    ShellCallCommandAdded,
    ShellCallCommandDelta,
    ShellCallCommandDone,
)
from .wire.items import ClientCall, ItemStatus, ShellAction, ShellCall

CommandStep = tuple[Literal["added", "delta", "done"], int, str]
"""What the arguments said of a command: it began (``""``), more of its text, or it ended
(its whole text); with the command's index."""
COMMANDS = "commands"


class CommandsReader:
    """Reads the strings of the ``commands`` array out of JSON arguments arriving in pieces
    (``{"commands": ["ls -la", "cat \\"a b\\""]}``), escapes resolved: :meth:`feed` gives
    the :data:`CommandStep` s each piece makes certain, :meth:`close` those of the end."""

    def __init__(self) -> None:
        self._lexer = Lexer()
        self._buffer = ""  # text the lexer has not read yet
        self._read = 0  # tokens of the lexer handled
        self._depth = 0
        self._in_value = False  # after a top-level key's colon
        self._key: list[str] = []
        self._listing = False  # inside the commands array
        self._open = False  # a command's string has begun and not ended
        self.commands: list[str] = []
        """The commands read so far (the last one maybe unfinished)."""

    def feed(self, piece: str) -> list[CommandStep]:
        """More arguments; returns what they say of the commands."""
        return self._run(self._buffer + piece, final=False)

    def close(self) -> list[CommandStep]:
        """The end of the arguments: what the rest says, and the end of an open command."""
        steps = self._run(self._buffer, final=True)
        if self._open:
            self._open = False
            steps.append(("done", len(self.commands) - 1, self.commands[-1]))
        return steps

    def _run(self, buffer: str, *, final: bool) -> list[CommandStep]:
        lexer = self._lexer
        stop = lexer.run(buffer, 0, final)
        self._buffer = buffer[stop:]
        steps: list[CommandStep] = []
        tokens = lexer.tokens
        for kind, value in tokens[self._read :]:
            self._token(kind, value, steps)
        self._read = len(tokens)
        return steps

    def _token(self, kind: int, value: str, steps: list[CommandStep]) -> None:
        if kind == T_OPEN:
            self._depth += 1
            if self._depth == 2 and self._in_value and value == "[" and "".join(self._key) == COMMANDS:
                self._listing = True
        elif kind == T_CLOSE:
            self._listing = self._listing and self._depth != 2
            self._depth -= 1
        elif self._listing and self._depth == 2:
            self._command(kind, value, steps)
        elif self._depth != 1:
            return
        elif kind == T_COLON:
            self._in_value = True
        elif kind == T_COMMA:
            self._in_value, self._key = False, []
        elif not self._in_value and kind != T_STR_END:
            self._key.append(value.strip("\"'") if kind != T_STR else value)

    def _command(self, kind: int, value: str, steps: list[CommandStep]) -> None:
        if kind == T_STR_BEGIN:
            self._open = True
            self.commands.append("")
            steps.append(("added", len(self.commands) - 1, ""))
        elif kind == T_STR and value and self._open:
            self.commands[-1] += value
            steps.append(("delta", len(self.commands) - 1, value))
        elif kind == T_STR_END and self._open:
            self._open = False
            steps.append(("done", len(self.commands) - 1, self.commands[-1]))


Numbering = Callable[[], int]
"""Gives the next event's sequence number."""


class ClientCallWriter:
    """The events of the call ``item`` (``in_progress``, as it opened) at ``index`` of the
    output; ``held``: nothing shows until the call is complete (see the module docstring)."""

    def __init__(self, item: ClientCall, index: int, *, held: bool) -> None:
        self.item = item
        self.index = index
        self.name = function_of(item).name
        """The call name of the tool called."""
        self._streams = isinstance(item, ShellCall) and not held
        self._reader = CommandsReader() if self._streams else None

    @property
    def held(self) -> bool:
        """Whether nothing of the call shows until it is complete."""
        return not self._streams

    def opened(self, number: Numbering) -> list[StreamEvent]:
        """The events of the call's start (``output_item.added`` of a streamed call)."""
        return [OutputItemAdded(number(), self.index, self.item)] if self._streams else []

    def delta(self, text: str, number: Numbering) -> list[StreamEvent]:
        """The events of more of the call's arguments."""
        if self._reader is None:
            return []
        return self._events(self._reader.feed(text), number)

    def close(
        self, arguments: str, status: ItemStatus, number: Numbering, *, refused: bool
    ) -> tuple[ClientCall | None, list[StreamEvent], str]:
        """The end of the call, whose whole ``arguments`` were written (``status``:
        ``completed`` at the call's end marker; ``refused``: the call rules refuse it):
        the finished item (``None``: dropped), its last events, and why its arguments do
        not make its item (``""``: they do, or the call was cut short)."""
        item = client_call(self.item, arguments, status) if status == "completed" else None
        problem = ""
        if item is None and status == "completed":
            problem = f"the arguments of {self.name!r} are not an object of its parameters"
        if self._reader is None:
            if refused or item is None:
                return None, [], problem
            opened = item.model_copy(update={"status": "in_progress"})
            return (
                item,
                [OutputItemAdded(number(), self.index, opened), OutputItemDone(number(), self.index, item)],
                "",
            )
        out = self._events(self._reader.close(), number)
        read = tuple(self._reader.commands)
        if item is None or refused or not isinstance(item, ShellCall):
            item = self.item.model_copy(update={"action": ShellAction(commands=read), "status": "incomplete"})
        else:
            out += self._missing(read, item.action.commands, number)
        out.append(OutputItemDone(number(), self.index, item))
        return item, out, problem

    def _events(self, steps: list[CommandStep], number: Numbering) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        for step, position, text in steps:
            if step == "added":
                out.append(ShellCallCommandAdded(number(), self.index, position, text))
            elif step == "delta":
                out.append(ShellCallCommandDelta(number(), self.index, position, text))
            else:
                out.append(ShellCallCommandDone(number(), self.index, position, text))
        return out

    def _missing(
        self, read: tuple[str, ...], commands: tuple[str, ...], number: Numbering
    ) -> list[StreamEvent]:
        """The events of the commands of the finished item the streamed arguments did not
        show (arguments a lenient reading took otherwise)."""
        steps: list[CommandStep] = []
        for position in range(len(read), len(commands)):
            command = commands[position]
            steps += [("added", position, ""), ("delta", position, command), ("done", position, command)]
        return self._events([step for step in steps if step[0] != "delta" or step[2]], number)
