"""What this package needs to know of a chat-template model's tokenizer.

A :class:`ModelTokenizer` holds a model's vocabulary: text → ids (:meth:`~ModelTokenizer.encode`)
and back (:meth:`~ModelTokenizer.decode`), the exact bytes of each id, its markers (the
added tokens a chat template writes: ``<|im_start|>``, ``<think>``, ``<tool_call>`` …)
with their ids, its chat template and named special tokens, and the ids that end an
assistant turn. Prompts are encoded through it (:mod:`.tokenize`) and sampled ids read
through it (:mod:`.decoding`).

A Harmony model (gpt-oss) is read by the core codec over o200k_harmony, the core's
:class:`~openchatml.core.encoding.Encoding`; this protocol is the vocabulary of every other
model. Loading one (from a folder or a hub id) is I/O: the engines do it
(:class:`~openchatml.engines.tokenizer.HFTokenizer`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol


class ModelTokenizer(Protocol):
    """A model's tokenizer (see the module docstring)."""

    @property
    def vocab_size(self) -> int:
        """How many ids there are, added tokens included: ids are ``0 .. vocab_size - 1``."""
        ...

    @property
    def markers(self) -> Mapping[str, int]:
        """The control markers, each text with its id, longest text first: the added tokens
        but those that are runs of whitespace (text wherever they come from)."""
        ...

    @property
    def chat_template(self) -> str | None:
        """The Jinja chat template (the ``default`` one of a named set); ``None`` if none."""
        ...

    @property
    def bos_token(self) -> str:
        """The text of the beginning-of-sequence token (``""`` if none)."""
        ...

    @property
    def eos_token(self) -> str:
        """The text of the end-of-sequence token (``""`` if none)."""
        ...

    @property
    def stop_token_ids(self) -> tuple[int, ...]:
        """The ids that end an assistant turn (the model's end-of-sequence ids)."""
        ...

    def encode(self, text: str) -> list[int]:
        """The ids of ``text`` as the tokenizer reads it: a marker spelled in it becomes
        the marker's id; nothing is added (no beginning-of-sequence id)."""
        ...

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids``, markers included (a character cut between ids is U+FFFD)."""
        ...

    def token_bytes(self, token: int) -> bytes:
        """The exact bytes ``token`` stands for (a marker: its text in UTF-8), also where
        it holds part of a character."""
        ...

    def is_marker(self, token: int) -> bool:
        """Whether ``token`` is one of the :attr:`markers` (not text)."""
        ...
