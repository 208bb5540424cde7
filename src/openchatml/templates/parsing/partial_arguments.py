"""The arguments of a call a partial parse ends inside (see :mod:`.machine`).

A partial parse (``ParseOptions.partial``) is a snapshot of an output that goes on. A
call cut off inside its arguments reports them as far as the model wrote them, in the
JSON the finished call would begin with: a key cut short (``{"arg``), a key waiting for
its value (``{"arg1": ``), a number or literal that may still grow (``{"n": 12``), a
tagged argument's name or raw value so far. Only a marker that may be beginning, an
unfinished escape, or a name not yet known is left out. The text is no complete JSON;
it continues what the call's argument deltas said so far, so a whole parse and a
streamed one agree.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from .lexer import Lexer
from .states import State
from .tagged_states import add_partial_value, partial_key

if TYPE_CHECKING:
    from .machine import Machine

__all__ = ["held_word", "write_partial_arguments"]

_WORD: Final = re.compile(r"""[^\s,:={}\[\]()"'<]+""")
"""A bare word as :class:`~.lexer.Lexer` reads one."""


def write_partial_arguments(m: Machine) -> None:
    """The output stops in the current call's arguments: add what was read of them and
    not yet written."""
    state = m.state
    if state is State.VALUE and m.writer is not None and m.lexer is not None:
        m.add_arguments(m.writer.pending(held_word(m.lexer, m.buf, m.pos)))
    elif state is State.JSON_CALL and m.json_call is not None and m.lexer is not None:
        reader = m.json_call
        if reader.in_args and reader.writer is not None:
            m.add_arguments(reader.writer.pending(held_word(m.lexer, m.buf, m.pos)))
        else:
            m.add_arguments(reader.pending(held_word))
    elif state is State.ARG_NAME and m.argument is not None:
        _partial_name(m)
    elif state is State.ARG_PREFIX and m.argument is not None:
        m.add_arguments(partial_key(m, m.argument.name, whole=True))
    elif state is State.ARG_VALUE and m.argument is not None:
        add_partial_value(m, m.argument)


def held_word(lexer: Lexer, buf: str, pos: int) -> str:
    """The bare word the lexer left unread at the end of ``buf`` (a number or literal
    that may go on), or ``""``: inside a string, what is left is an unfinished escape;
    elsewhere, a marker that may be beginning."""
    if lexer.in_string or lexer.ended or lexer.stopped:
        return ""
    rest = buf[pos:].strip()
    return rest if rest and _WORD.fullmatch(rest) else ""


def _partial_name(m: Machine) -> None:
    """A tagged argument's name cut short: its key so far (a marker that may be
    beginning at its end left out)."""
    buf, i = m.buf, m.pos
    hold, _, _ = m.plan.argument_name_scanner.find(buf, i, False)
    name = buf[i:hold].strip().strip("\"'").strip()
    if name:
        m.add_arguments(partial_key(m, name, whole=False))
