"""An engine given the model's tokenizer: an upstream server samples the ids, while the
tokenizer (its chat template, its vocabulary, its end-of-turn ids) lets this server
render prompts and read answers of a model that does not speak Harmony.

``with_tokenizer(engine, "path/or/hub-id")`` loads the tokenizer with transformers
(``AutoTokenizer``) and returns a :class:`TokenizedEngine`: the engine as it was, plus
``tokenizer``, ``chat_template`` and ``stop_token_ids``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from .base import Chunk, Engine, EngineError, ModelInfo, SamplingParams, chat_template_of


class TokenizedEngine:
    """``engine`` with ``tokenizer`` (see the module docstring)."""

    def __init__(self, engine: Engine, tokenizer: Any, *, stop_token_ids: Sequence[int] = ()) -> None:
        self.engine = engine
        self.tokenizer = tokenizer
        self.stop_token_ids = tuple(stop_token_ids)

    @property
    def info(self) -> ModelInfo:
        """The wrapped engine's model."""
        return self.engine.info

    @property
    def chat_template(self) -> str | None:
        """The tokenizer's Jinja chat template (the ``default`` one of a named set), if any."""
        return chat_template_of(self.tokenizer)

    def generate(self, prompt: Sequence[int], params: SamplingParams) -> AsyncIterator[Chunk]:
        """The wrapped engine's stream."""
        return self.engine.generate(prompt, params)

    async def aclose(self) -> None:
        """Close the wrapped engine."""
        await self.engine.aclose()


def with_tokenizer(engine: Engine, tokenizer: str) -> TokenizedEngine:
    """``engine`` with the tokenizer at ``tokenizer`` (a folder or hub id); its end-of-turn
    ids from the folder's generation config, else the tokenizer's eos token. Raises
    :class:`EngineError` when transformers is missing or the tokenizer cannot be loaded."""
    try:
        import transformers
    except ImportError as exc:
        raise EngineError("--tokenizer needs transformers: pip install 'openchatml[transformers]'") from exc
    try:
        loaded = transformers.AutoTokenizer.from_pretrained(tokenizer)
    except Exception as exc:
        raise EngineError(f"cannot load the tokenizer {tokenizer!r}: {type(exc).__name__}: {exc}") from exc
    eos: Any = None
    try:
        eos = transformers.GenerationConfig.from_pretrained(tokenizer).eos_token_id
    except Exception:  # no generation config beside the tokenizer: its own eos token
        eos = getattr(loaded, "eos_token_id", None)
    stops = eos if isinstance(eos, list) else [] if eos is None else [eos]
    return TokenizedEngine(engine, loaded, stop_token_ids=[int(i) for i in stops])
