"""How the ``openchatml`` command reports a failure: one line on stderr, never a traceback.

Bad input (a typed :class:`~openchatml.core.errors.OCMError`, or an :class:`InputError`)
prints ``error: E-CODE: message (at line L, column C)`` and exits with 1; a usage error
(an unknown option or value, a missing or unreadable file) prints ``error: message (see
'openchatml COMMAND --help')`` and exits with 2. :class:`CommandGroup` applies this to
every command below it, those of its subgroups included.
"""

from __future__ import annotations

import errno
from typing import IO, Any

import click

from .core.errors import OCMError

INPUT_ERROR_STATUS = 1
USAGE_ERROR_STATUS = 2


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) made one space."""
    return " ".join(text.split())


class InputError(click.ClickException):
    """Bad input the command cannot go on with: ``error: MESSAGE`` on stderr, exit status 1.

    ``message`` starts with its error code (``E-TOOLS: …``); ``hint``, when given, says
    what would fix it.
    """

    exit_code = INPUT_ERROR_STATUS

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(one_line(message) + (f"; hint: {one_line(hint)}" if hint else ""))

    @classmethod
    def of(cls, error: OCMError, hint: str | None = None) -> InputError:
        """The one-line report of a typed error (its code, message and position)."""
        return cls(str(error), hint)

    def show(self, file: IO[Any] | None = None) -> None:
        """Print ``error: MESSAGE`` on stderr."""
        click.echo(f"error: {self.message}", err=True)


class _UsageLine(click.ClickException):
    """A usage error on one line: the problem and where the command's help is."""

    exit_code = USAGE_ERROR_STATUS

    def __init__(self, error: click.UsageError) -> None:
        where = error.ctx.command_path if error.ctx is not None else "openchatml"
        super().__init__(f"{one_line(error.format_message()).rstrip('.')} (see '{where} --help')")

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"error: {self.message}", err=True)


def _reported(error: Exception) -> click.ClickException | None:
    """The one-line report of ``error``, or ``None`` to let it propagate as it is."""
    if isinstance(error, OCMError):
        return InputError.of(error)
    if isinstance(error, click.exceptions.NoArgsIsHelpError):
        return None  # the help text itself
    if isinstance(error, click.UsageError):
        return _UsageLine(error)
    if isinstance(error, OSError) and error.errno != errno.EPIPE:
        name = f": {error.filename}" if error.filename is not None else ""
        return _UsageLine(click.UsageError(f"cannot read{name}: {error.strerror or error}"))
    return None


class CommandGroup(click.Group):
    """A command group whose commands (and subgroups') report errors in one line."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """The group's context; a usage error in its own options becomes one line."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            report = _reported(exc)
            if report is None:
                raise
            raise report from None

    def invoke(self, ctx: click.Context) -> Any:
        """Run the chosen command; a typed error, a usage error or a failed read becomes one line."""
        try:
            return super().invoke(ctx)
        except (OCMError, click.UsageError, OSError) as exc:
            report = _reported(exc)
            if report is None:
                raise
            raise report from None


__all__ = ["INPUT_ERROR_STATUS", "USAGE_ERROR_STATUS", "CommandGroup", "InputError", "one_line"]
