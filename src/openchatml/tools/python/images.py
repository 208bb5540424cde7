"""The images a cell made, read from the kernel's work folder as ``data:`` URLs.

The names come from the kernel, which runs the model's code: they are not trusted. An
image is read only when its name is a plain file name in the work folder (no path, no
dot-file), the file is a regular file opened without following a link (code in the
sandbox may leave a link to a host file in its folder: the server, outside the sandbox,
must never read through it), at most :data:`MAX_IMAGE_BYTES` long, and a PNG by its first
bytes. Anything else is skipped.
"""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path
from typing import Final

MAX_IMAGE_BYTES: Final = 4 * 1024 * 1024
"""The largest image returned (a figure is a few hundred kilobytes)."""
PNG_SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"


def image_url(work_dir: Path, name: str) -> str | None:
    """The ``data:image/png;base64,…`` URL of the PNG ``name`` in ``work_dir``, or ``None``
    where it is not one to read (see the module docstring)."""
    if not name or name != os.path.basename(name) or name.startswith(".") or "\x00" in name:
        return None
    try:
        descriptor = os.open(work_dir / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_IMAGE_BYTES:
            return None
        data = os.read(descriptor, MAX_IMAGE_BYTES + 1)
    finally:
        os.close(descriptor)
    if len(data) > MAX_IMAGE_BYTES or not data.startswith(PNG_SIGNATURE):
        return None
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")
