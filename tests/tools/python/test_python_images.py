"""The images of a cell, read from the kernel's folder by the server: only plain PNG files
in that folder, never through a link the sandboxed code left there."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from openchatml.tools.python.images import MAX_IMAGE_BYTES, PNG_SIGNATURE, image_url

PNG = PNG_SIGNATURE + b"\x00\x00\x00\rIHDR" + bytes(17)


def test_a_png_comes_back_as_a_data_url(tmp_path: Path) -> None:
    (tmp_path / "figure-1-1.png").write_bytes(PNG)
    url = image_url(tmp_path, "figure-1-1.png")
    assert url is not None and url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == PNG


def test_a_link_is_never_followed(tmp_path: Path) -> None:
    secret = tmp_path / "outside.png"
    secret.write_bytes(PNG + b"host secret")
    work = tmp_path / "work"
    work.mkdir()
    (work / "figure-1-1.png").symlink_to(secret)
    assert image_url(work, "figure-1-1.png") is None


@pytest.mark.parametrize(
    "name", ["../outside.png", "/etc/passwd", "sub/figure.png", "", ".hidden.png", "a\x00b"]
)
def test_only_plain_names_in_the_folder_are_read(tmp_path: Path, name: str) -> None:
    (tmp_path / "outside.png").write_bytes(PNG)
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "figure.png").write_bytes(PNG)
    (work / ".hidden.png").write_bytes(PNG)
    assert image_url(work, name) is None


def test_what_is_not_a_small_png_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "text.png").write_bytes(b"not an image")
    (tmp_path / "huge.png").write_bytes(PNG + bytes(MAX_IMAGE_BYTES))
    (tmp_path / "folder.png").mkdir()
    os.mkfifo(tmp_path / "pipe.png")
    for name in ("text.png", "huge.png", "folder.png", "pipe.png", "missing.png"):
        assert image_url(tmp_path, name) is None, name
