"""Engine fixtures: the tiny gpt-oss model, built once per session into a temporary home."""

from __future__ import annotations

from pathlib import Path

import pytest

from openchatml.demo_models.tiny_random import ensure_tiny_model


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny random-weight gpt-oss model folder (real o200k_harmony tokenizer)."""
    return ensure_tiny_model(tmp_path_factory.mktemp("openchatml-home"))
