"""The kernel's own side: a loop that runs code cells in one namespace, like a notebook.

The kernel process runs this module's source (``python -I -c <source> <tag> <chars>``),
so it uses the standard library only. Requests and replies are frames on the process's
stdin and stdout: a 4-byte big-endian length, then a UTF-8 JSON object. The first reply
is ``{"ready": true}``; each request ``{"code": …}`` gets one reply with ``stdout``,
``stderr`` (at most ``chars`` characters each, the rest counted in ``*_dropped``),
``value`` (the ``repr`` of the last expression, or ``None``), ``error`` (the traceback
text, or ``None``) and ``images`` (the matplotlib figures the cell left open, saved as
PNG files in the working folder). Output is captured at the file-descriptor level, so
what C code and child processes print is caught too.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import json
import linecache
import os
import struct
import sys
import tempfile
import traceback
from typing import IO, Any, BinaryIO

HEADER = struct.Struct(">I")
"""A frame's length prefix."""

MAX_FRAME = 64 * 1024 * 1024
"""The longest frame either side accepts, in bytes."""


def encode_frame(message: dict[str, Any]) -> bytes:
    """``message`` as one frame: length prefix and JSON."""
    body = json.dumps(message, ensure_ascii=False).encode("utf-8", "backslashreplace")
    return HEADER.pack(len(body)) + body


def read_frame(stream: BinaryIO) -> dict[str, Any] | None:
    """The next frame's object from a blocking ``stream``; ``None`` at its end."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (length,) = HEADER.unpack(header)
    if length > MAX_FRAME:
        return None
    body = b""
    while len(body) < length:
        chunk = stream.read(length - len(body))
        if not chunk:
            return None
        body += chunk
    message = json.loads(body)
    return message if isinstance(message, dict) else None


def _execute(code: str, namespace: dict[str, Any], filename: str) -> str | None:
    """Run ``code``; the ``repr`` of its last expression statement's value, if not ``None``."""
    tree = ast.parse(code, filename, "exec")
    last: ast.Expression | None = None
    final = tree.body[-1] if tree.body else None
    if isinstance(final, ast.Expr):
        tree.body.pop()
        last = ast.Expression(final.value)
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    exec(compile(tree, filename, "exec"), namespace)
    if last is None:
        return None
    value = eval(compile(last, filename, "eval"), namespace)
    if value is None:
        return None
    namespace["_"] = value
    return repr(value)


def _traceback_text(error: BaseException, filename: str) -> str:
    """The traceback of ``error`` from the cell's own frames on (the runner's are left out)."""
    if isinstance(error, SyntaxError):
        return "".join(traceback.format_exception_only(error))
    frames = error.__traceback__
    while frames is not None and frames.tb_frame.f_code.co_filename != filename:
        frames = frames.tb_next
    return "".join(traceback.format_exception(type(error), error, frames or error.__traceback__))


def _read_capture(capture: IO[bytes], chars: int) -> tuple[str, int]:
    """The first ``chars`` characters written to ``capture``, and how many more there were."""
    size = os.fstat(capture.fileno()).st_size
    capture.seek(0)
    text = capture.read(min(size, chars * 4)).decode("utf-8", "replace")
    if size <= chars and len(text) <= chars:
        return text, 0
    kept = text[:chars]
    return kept, max(size - len(kept.encode("utf-8", "replace")), 0)


def _save_figures(number: int) -> list[str]:
    """Save and close the open matplotlib figures; their file names in the working folder."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return []
    names = []
    try:
        for index, figure_number in enumerate(pyplot.get_fignums(), 1):
            figure = pyplot.figure(figure_number)
            name = f"figure-{number}-{index}.png"
            figure.savefig(name)
            pyplot.close(figure)
            names.append(name)
    except Exception as exc:  # a broken figure must not break the kernel
        print(f"figure not saved: {exc!r}", file=sys.stderr)
    return names


class Runner:
    """The kernel: one namespace, the cells run so far, the process that owns the pipes."""

    def __init__(self, chars: int) -> None:
        self.chars = chars
        self.owner = os.getpid()
        self.namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
        self.count = 0
        self.inbox = os.fdopen(os.dup(0), "rb", buffering=0)
        self.outbox = os.fdopen(os.dup(1), "wb", buffering=0)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - input() meets end of file
        sys.stdout = open(1, "w", buffering=1, closefd=False, errors="backslashreplace")  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False, errors="backslashreplace")  # noqa: SIM115

    def send(self, message: dict[str, Any]) -> None:
        """Write one reply frame."""
        self.outbox.write(encode_frame(message))

    def cell(self, code: str) -> dict[str, Any]:
        """Run one cell with fds 1 and 2 captured; its reply."""
        self.count += 1
        filename = f"<cell {self.count}>"
        value = error = None
        saved = os.dup(1), os.dup(2)
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            try:
                value = _execute(code, self.namespace, filename)
            except BaseException as exc:  # SystemExit and KeyboardInterrupt are the cell's too
                error = _traceback_text(exc, filename)
            images = _save_figures(self.count)
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            if os.getpid() != self.owner:  # a child the cell forked: it must not reply
                os._exit(0)
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            stdout, stdout_dropped = _read_capture(out, self.chars)
            stderr, stderr_dropped = _read_capture(err, self.chars)
        for descriptor in saved:
            os.close(descriptor)
        return {
            "stdout": stdout,
            "stderr": stderr,
            "stdout_dropped": stdout_dropped,
            "stderr_dropped": stderr_dropped,
            "value": value if value is None or len(value) <= self.chars else value[: self.chars] + "…",
            "error": error,
            "images": images,
        }

    def serve(self) -> None:
        """Answer requests until the parent closes the pipe."""
        self.send({"ready": True})
        while (request := read_frame(self.inbox)) is not None:
            reply = self.cell(str(request.get("code", "")))
            self.send(reply)


def main() -> None:
    """Start the kernel: ``argv`` is ``[tag, chars]``."""
    chars = int(sys.argv[2]) if len(sys.argv) > 2 else 20_000
    Runner(chars).serve()


if __name__ == "__main__":
    main()
