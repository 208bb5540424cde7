"""Engines: prompt token ids in, a cancellable stream of token ids out."""

from .base import Engine, EngineError, ModelInfo, SamplingParams

__all__ = ["Engine", "EngineError", "ModelInfo", "SamplingParams"]
