"""The exact bytes of each token of a Hugging Face tokenizer, for log probabilities.

``tokenizer.decode([id])`` is not a token's bytes: a byte-level BPE token that holds part
of a UTF-8 character decodes to ``"�"``. :class:`HFVocabulary` reads the bytes from the
token's own spelling instead, by the kind of the tokenizer's decoder:

* ``ByteLevel`` (GPT-2 style: Llama 3, Qwen, gpt-oss…): each character of the token
  stands for one byte (GPT-2's printable alphabet of the 256 bytes);
* SentencePiece style (``Metaspace``, or a ``Sequence`` with ``Replace("▁", " ")`` /
  ``ByteFallback``: Llama 2, Mistral, Gemma…): ``<0xNN>`` is the byte ``NN``, ``▁`` a space,
  the rest UTF-8;
* added tokens (markers such as ``<|im_start|>``) are their text in UTF-8;
* anything else: ``decode([id])`` as UTF-8.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Final

__all__ = ["HFVocabulary", "token_bytes_reader"]

_BYTE_PIECE: Final = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def _gpt2_alphabet() -> dict[str, int]:
    """GPT-2's reversible map of printable characters to the 256 byte values."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    chars = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + extra)
            extra += 1
    return {c: b for b, c in chars.items()}


_GPT2: Final = _gpt2_alphabet()


def _decoder_kinds(tokenizer: Any) -> set[str]:
    """The types of the backend decoder and of its members (``Sequence``)."""
    decoder = getattr(getattr(tokenizer, "backend_tokenizer", None), "decoder", None)
    if decoder is None:
        return set()
    try:
        state = json.loads(decoder.__getstate__())
    except (AttributeError, TypeError, ValueError):
        return {type(decoder).__name__}
    kinds = {str(state.get("type"))}
    for member in state.get("decoders") or ():
        kinds.add(str(member.get("type")))
        if member.get("type") == "Replace" and "▁" in json.dumps(member, ensure_ascii=False):
            kinds.add("Metaspace")
    return kinds


def token_bytes_reader(tokenizer: Any) -> Callable[[int], bytes]:
    """A function from token id to the token's bytes (see the module docstring)."""
    added = {int(i): str(t) for t, i in tokenizer.get_added_vocab().items()}
    kinds = _decoder_kinds(tokenizer)
    byte_level = "ByteLevel" in kinds
    metaspace = bool(kinds & {"Metaspace", "ByteFallback"})

    def fallback(token: int) -> bytes:
        return str(tokenizer.decode([token])).encode("utf-8", "replace")

    def read(token: int) -> bytes:
        if token in added:
            return added[token].encode("utf-8")
        piece = tokenizer.convert_ids_to_tokens(token)
        if not isinstance(piece, str):
            return fallback(token)
        if byte_level:
            try:
                return bytes(_GPT2[c] for c in piece)
            except KeyError:  # not a byte-level spelling after all
                return fallback(token)
        if metaspace:
            whole = _BYTE_PIECE.fullmatch(piece)
            if whole is not None:
                return bytes([int(whole.group(1), 16)])
            return piece.replace("▁", " ").encode("utf-8")
        return fallback(token)

    return read


class HFVocabulary:
    """A Hugging Face tokenizer's tokens as a :class:`~.stream.Vocabulary`: exact bytes
    of each id; the ids of ``markers`` are control tokens, not text."""

    def __init__(self, tokenizer: Any, markers: Sequence[str]) -> None:
        added = tokenizer.get_added_vocab()
        self._control = frozenset(added[m] for m in markers if m in added)
        self._bytes = lru_cache(maxsize=65536)(token_bytes_reader(tokenizer))

    def token_bytes(self, token: int) -> bytes:
        """The bytes of ``token``."""
        return self._bytes(token)

    def is_text(self, token: int) -> bool:
        """Whether ``token`` is text (not one of the template's markers)."""
        return token not in self._control
