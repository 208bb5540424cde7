"""Shared fixtures: the openai-harmony oracle, loaded offline from the same vocabulary."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from openchatml.encoding import export_o200k_base

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=100
)
settings.register_profile(
    "thorough", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=2000
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


# the reference loads o200k_base from this folder instead of downloading it
os.environ.setdefault(
    "TIKTOKEN_ENCODINGS_BASE", str(export_o200k_base(Path(tempfile.gettempdir()) / "openchatml-tiktoken"))
)


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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "vllm: needs a real vLLM (CPU) server; runs only with OPENCHATML_TEST_VLLM=1"
    )
