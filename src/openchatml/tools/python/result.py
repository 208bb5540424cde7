"""What one code cell gives back: :class:`PythonResult`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PythonResult:
    """The outcome of one cell.

    ``stdout`` and ``stderr`` are what it printed (``*_dropped`` counts the bytes cut off
    past the limit); ``value`` the ``repr`` of its last expression; ``error`` the
    traceback of an exception it raised, or why the kernel failed. ``images`` are the
    files its figures were saved to, in the working folder. ``timed_out`` says the cell
    ran past its time; ``state_lost`` that the kernel is gone (timed out, killed or
    died), so the next cell starts in a fresh one; ``restarted`` that this cell ran in a
    fresh kernel because the conversation's previous one was lost.
    """

    stdout: str = ""
    stderr: str = ""
    value: str | None = None
    error: str | None = None
    images: tuple[str, ...] = ()
    stdout_dropped: int = 0
    stderr_dropped: int = 0
    timed_out: bool = False
    state_lost: bool = False
    restarted: bool = False

    @property
    def ok(self) -> bool:
        """Whether the cell ran to its end without an exception."""
        return self.error is None and not self.timed_out and not self.state_lost

    def text(self) -> str:
        """What the model reads back: notes, output, last value and traceback, in order."""
        parts: list[str] = []
        if self.restarted:
            parts.append("[the kernel was restarted: variables and imports from earlier cells are gone]")
        if self.stdout:
            parts.append(self.stdout + _dropped_note(self.stdout_dropped))
        if self.stderr:
            parts.append(self.stderr + _dropped_note(self.stderr_dropped))
        if self.value is not None:
            parts.append(self.value)
        if self.error:
            parts.append(self.error)
        if self.images:
            parts.append("\n".join(f"[image saved: {name}]" for name in self.images))
        if self.state_lost and not self.timed_out and not self.error:
            parts.append("[the kernel stopped: its state is lost]")
        if not parts:
            return "[no output; use print() to see values]"
        return "\n".join(part.rstrip("\n") for part in parts)


def _dropped_note(dropped: int) -> str:
    return f"\n[… {dropped} more bytes not shown]" if dropped else ""
