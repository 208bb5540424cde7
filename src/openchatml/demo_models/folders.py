"""Where demo models are kept, and how a freshly built folder is put in place atomically."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path


def models_home(home: Path | None) -> Path:
    """``home``, else ``$OPENCHATML_HOME``, else ``~/.cache/openchatml``."""
    if home is not None:
        return Path(home)
    env = os.environ.get("OPENCHATML_HOME")
    return Path(env) if env else Path.home() / ".cache" / "openchatml"


def install_folder(work: Path, target: Path, is_current: Callable[[Path], bool]) -> None:
    """Rename ``work`` to ``target``; a current ``target`` (a racing build) is kept, a stale one replaced."""
    for _ in range(3):
        try:
            work.rename(target)
            return
        except OSError:
            if is_current(target):
                return
        stale = target.with_name(f".{target.name}.{uuid.uuid4().hex}.stale")
        try:
            target.rename(stale)
        except FileNotFoundError:
            continue
        shutil.rmtree(stale, ignore_errors=True)
    raise OSError(f"could not install the model at {target}")
