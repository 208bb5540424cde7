"""Shared fixtures: the openai-harmony oracle, loaded offline from the same vocabulary."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from openchatml.core.encoding import export_o200k_base

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))  # the fuzz package: shared checks

import llamacpp_harness
import vllm_harness

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


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[vllm_harness.VllmServer]:
    """vLLM (CPU) serving the tiny gpt-oss, started once per session."""
    if vllm_harness.MODE == "0":
        pytest.skip("real-vLLM tests are off (OPENCHATML_TEST_VLLM=0)")
    from openchatml.demo_models.tiny_random import ensure_tiny_model

    yield from vllm_harness.serving_for_tests(ensure_tiny_model(), tmp_path_factory)


@pytest.fixture(scope="session")
def llamacpp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[llamacpp_harness.LlamaServer]:
    """llama.cpp's llama-server serving the tiny gpt-oss (as GGUF), started once per session."""
    if llamacpp_harness.MODE == "0":
        pytest.skip("real-llama.cpp tests are off (OPENCHATML_TEST_LLAMACPP=0)")
    yield from llamacpp_harness.serving_for_tests(tmp_path_factory)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "vllm: needs a real vLLM (CPU) server, started once per session")
    config.addinivalue_line(
        "markers",
        "llamacpp: needs a real llama.cpp llama-server (built from source once), started once per session",
    )
    config.addinivalue_line(
        "markers",
        "clients: real client programs (Codex CLI, the JavaScript SDK and Agents SDK from npm, "
        "installed once; the Python Agents SDK)",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that need llama.cpp, then those that need vLLM, run last, so their servers
    are up only at the end of the session."""
    items.sort(
        key=lambda item: (
            item.get_closest_marker("vllm") is not None,
            item.get_closest_marker("llamacpp") is not None,
        )
    )
