"""Engines: prompt token ids in, a cancellable stream of token-id chunks out.

``TransformersEngine`` (``engines.transformers``) runs a model in-process;
``UpstreamEngine`` (``engines.upstream``) drives a vLLM or llama.cpp server;
``HFTokenizer`` (``engines.tokenizer``) is what they know of the model's tokenizer.
The random-weight test and demo models live in :mod:`openchatml.demo_models`.
They are imported from their modules, so that importing this package loads no torch.
"""

from .base import Chunk, Engine, EngineError, ModelInfo, SamplingParams, TokenLogprob
from .tokenizer import HFTokenizer

__all__ = ["Chunk", "Engine", "EngineError", "HFTokenizer", "ModelInfo", "SamplingParams", "TokenLogprob"]
