"""Engine fixtures: the tiny gpt-oss model, built once per session into a temporary home;
the stub upstream server of ``upstream_stub``, one per test module; vLLM (CPU) serving the
tiny Qwen3 chat model, for the module that asks for it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from upstream_stub import Running, Stub, serving

import vllm_harness
from openchatml.demo_models.tiny_random import ensure_tiny_model


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny random-weight gpt-oss model folder (real o200k_harmony tokenizer)."""
    return ensure_tiny_model(tmp_path_factory.mktemp("openchatml-home"))


@pytest.fixture(scope="module")
def upstream() -> Iterator[Running]:
    """The stub upstream server (``upstream_stub``), serving for the test module."""
    with serving() as running:
        yield running


@pytest.fixture()
def stub(upstream: Running) -> Stub:
    """The stub, its record of requests and its grammar mode reset for the test."""
    upstream.stub.reset()
    return upstream.stub


@pytest.fixture(scope="module")
def vllm_chat_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[vllm_harness.VllmServer]:
    """vLLM (CPU) serving the tiny Qwen3 chat model (``tiny-chat-qwen3``), for the test module
    that asks for it (by the rules of ``OPENCHATML_TEST_VLLM``): stopped after it, so that
    its engine does not share the cores with the session's vLLM."""
    if vllm_harness.MODE == "0":
        pytest.skip("real-vLLM tests are off (OPENCHATML_TEST_VLLM=0)")
    from openchatml.demo_models.catalog import ensure_demo_model

    yield from vllm_harness.serving_for_tests(ensure_demo_model("tiny-chat-qwen3", None), tmp_path_factory)
