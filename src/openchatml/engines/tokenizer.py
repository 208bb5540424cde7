"""A Hugging Face tokenizer as the model's :class:`~openchatml.templates.model_tokenizer.ModelTokenizer`.

:class:`HFTokenizer` wraps a ``transformers`` tokenizer (:meth:`HFTokenizer.load` reads
one from a folder or hub id, with the end-of-turn ids of its generation config) and is
built once, then given to the engine and, through it, to the dialect that renders
prompts and reads answers.

The exact bytes of a token: ``tokenizer.decode([id])`` is not a token's bytes, as a
byte-level BPE token that holds part of a UTF-8 character decodes to ``"�"``. They are read
from the token's own spelling instead, by the kind of the tokenizer's decoder:

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
import os
import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Final

from .base import EngineError

__all__ = ["HFTokenizer"]

_BYTE_PIECE: Final = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_CACHED_BYTES: Final = 65536
"""Token ids whose bytes are kept once read."""


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


def _token_bytes_reader(tokenizer: Any) -> Callable[[int], bytes]:
    """A function from token id to the bytes of that token of the ``transformers``
    ``tokenizer`` (see the module docstring)."""
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


def _chat_template_of(tokenizer: Any) -> str | None:
    """A ``transformers`` tokenizer's Jinja chat template (the ``default`` one of a named
    set), if it has one."""
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):
        template = template.get("default")
    return template if isinstance(template, str) else None


def _id_list(value: Any) -> tuple[int, ...]:
    """An id, a list of ids or ``None`` as a tuple of ids."""
    if value is None:
        return ()
    return tuple(int(i) for i in (value if isinstance(value, list | tuple) else [value]))


class HFTokenizer:
    """A ``transformers`` tokenizer (``hf_tokenizer``) as a
    :class:`~openchatml.templates.model_tokenizer.ModelTokenizer`. ``stop_token_ids``:
    the ids that end an assistant turn (default: the tokenizer's eos token's)."""

    def __init__(self, tokenizer: Any, *, stop_token_ids: Sequence[int] | None = None) -> None:
        self.hf_tokenizer = tokenizer
        added = {str(text): int(i) for text, i in tokenizer.get_added_vocab().items()}
        ordered = sorted((text for text in added if text.strip()), key=len, reverse=True)
        self._markers = MappingProxyType({text: added[text] for text in ordered})
        self._marker_ids = frozenset(self._markers.values())
        if stop_token_ids is None:
            stop_token_ids = _id_list(getattr(tokenizer, "eos_token_id", None))
        self._stop_ids = tuple(int(i) for i in stop_token_ids)
        self._chat_template = _chat_template_of(tokenizer)
        self._vocab_size = len(tokenizer)
        self._bytes = lru_cache(maxsize=_CACHED_BYTES)(_token_bytes_reader(tokenizer))

    @classmethod
    def load(cls, source: str | os.PathLike[str]) -> HFTokenizer:
        """The tokenizer in ``source`` (a folder or hub id), its turns ended by the eos ids
        of the generation config beside it, else by its eos token. Raises
        :class:`EngineError` when transformers is missing or the tokenizer cannot be loaded."""
        try:
            import transformers
        except ImportError as exc:
            raise EngineError(
                "loading a tokenizer needs transformers: pip install 'openchatml[transformers]'"
            ) from exc
        where = str(source)
        try:
            loaded = transformers.AutoTokenizer.from_pretrained(where)
        except Exception as exc:
            raise EngineError(f"cannot load the tokenizer {where!r}: {type(exc).__name__}: {exc}") from exc
        try:
            stops = _id_list(transformers.GenerationConfig.from_pretrained(where).eos_token_id)
        except Exception:  # no generation config beside the tokenizer: its own eos token
            stops = ()
        return cls(loaded, stop_token_ids=stops or None)

    @property
    def vocab_size(self) -> int:
        """How many ids there are, added tokens included."""
        return self._vocab_size

    @property
    def markers(self) -> Mapping[str, int]:
        """The added tokens but runs of whitespace, text → id, longest first."""
        return self._markers

    @property
    def chat_template(self) -> str | None:
        """The Jinja chat template (the ``default`` one of a named set), if any."""
        return self._chat_template

    @property
    def bos_token(self) -> str:
        """The beginning-of-sequence token's text (``""`` if none)."""
        return str(getattr(self.hf_tokenizer, "bos_token", None) or "")

    @property
    def eos_token(self) -> str:
        """The end-of-sequence token's text (``""`` if none)."""
        return str(getattr(self.hf_tokenizer, "eos_token", None) or "")

    @property
    def stop_token_ids(self) -> tuple[int, ...]:
        """The ids that end an assistant turn."""
        return self._stop_ids

    def encode(self, text: str) -> list[int]:
        """The ids of ``text`` (markers spelled in it become their ids; no bos id added)."""
        return list(self.hf_tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids``, markers included."""
        return str(self.hf_tokenizer.decode(list(ids), skip_special_tokens=False))

    def token_bytes(self, token: int) -> bytes:
        """The exact bytes of ``token`` (see the module docstring)."""
        return self._bytes(token)

    def is_marker(self, token: int) -> bool:
        """Whether ``token`` is one of the :attr:`markers`."""
        return token in self._marker_ids
