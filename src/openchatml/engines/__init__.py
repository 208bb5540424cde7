"""Engines: prompt token ids in, a cancellable stream of token-id chunks out.

``TransformersEngine`` (``engines.transformers``) runs a model in-process;
``UpstreamEngine`` (``engines.upstream``) drives a vLLM or llama.cpp server;
``ensure_tiny_model`` (``engines.tiny``) builds a tiny random-weight gpt-oss offline.
They are imported from their modules, so that importing this package loads no torch.
"""

from .base import Chunk, Engine, EngineError, ModelInfo, SamplingParams, TokenLogprob

__all__ = ["Chunk", "Engine", "EngineError", "ModelInfo", "SamplingParams", "TokenLogprob"]
