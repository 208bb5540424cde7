"""A request's grammar over a model's vocabulary, with llguidance: checked before generation,
then a mask of the ids allowed at each sampling step.

Theory of operation: :meth:`Guidance.of` builds llguidance's tokenizer once per model
vocabulary — o200k_harmony for a Harmony model (``tokenizer`` ``None``), else the model's
:class:`~openchatml.templates.model_tokenizer.ModelTokenizer` — with the control tokens
(Harmony's specials; a template model's markers and stop ids) as special tokens: the
grammar matches them only as tokens (``<[id]>``), never as their spelled text.
:func:`check_grammar` compiles a Lark grammar without any model vocabulary (its verdict
cached per text); :meth:`Guidance.matcher` hands out a :class:`GrammarMatcher` for one generation, copied
from a matcher compiled once per grammar text and kept in a small LRU cache. A matcher's
:meth:`~GrammarMatcher.allowed` is a boolean array over the vocabulary; the sampler sets the
others' logits to minus infinity, samples, and :meth:`~GrammarMatcher.advance` the matcher.

Choice of library (measured with ``bench/bench_grammar_engines.py``, see docs/server.md):
llguidance matches special tokens as tokens, reads Lark with inline ``%json`` schemas and
nested ``%lark`` grammars, and compiles our grammars in milliseconds; xgrammar reads
neither token references nor Lark.
"""

from __future__ import annotations

import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Final

import llguidance as llg
import numpy as np
from numpy.typing import NDArray

from ..core.encoding import load_encoding
from ..core.tokens import FIRST_SPECIAL_ID
from ..templates.model_tokenizer import ModelTokenizer

ENDOFTEXT_ID: Final = 199999
CACHE_SIZE: Final = 64
"""Compiled grammars kept per vocabulary (distinct tools, choices and formats)."""


class GrammarError(ValueError):
    """A grammar that llguidance cannot compile over the model's vocabulary."""


class _Vocabulary:
    """A vocabulary as llguidance's ``TokenizerWrapper`` reads it."""

    def __init__(self, tokenizer: ModelTokenizer | None) -> None:
        if tokenizer is None:
            encoding = load_encoding()
            self.tokens: list[bytes] = list(encoding.token_bytes)
            self.eos_token_id = ENDOFTEXT_ID
            self.special_token_ids = list(range(FIRST_SPECIAL_ID, len(self.tokens)))
            self._encode: Callable[[str], list[int]] = encoding.encode
        else:
            self.tokens = [tokenizer.token_bytes(i) for i in range(tokenizer.vocab_size)]
            stops = list(tokenizer.stop_token_ids)
            self.eos_token_id = stops[0] if stops else tokenizer.vocab_size - 1
            self.special_token_ids = sorted({*tokenizer.markers.values(), *stops})
            self._encode = tokenizer.encode
        self.bos_token_id = None

    def __call__(self, text: str) -> list[int]:
        return list(self._encode(text))


class GrammarMatcher:
    """One generation's place in its grammar (not thread-safe: one sampler uses it)."""

    def __init__(self, matcher: Any, vocab_size: int) -> None:
        self._matcher = matcher
        self._vocab_size = vocab_size
        self._bitmask = np.zeros((vocab_size + 31) // 32, dtype=np.int32)

    def allowed(self) -> NDArray[np.bool_]:
        """Which ids may come next (length: the tokenizer's vocabulary). Raises
        :class:`GrammarError` where the grammar has failed."""
        if self._matcher.is_error():
            raise GrammarError(self._matcher.get_error())
        self._matcher.unsafe_compute_mask_ptr(self._bitmask.ctypes.data, self._bitmask.nbytes)
        bits = np.unpackbits(self._bitmask.view(np.uint8), count=self._vocab_size, bitorder="little")
        return bits.view(np.bool_)

    def advance(self, token: int) -> bool:
        """Take ``token``; ``False`` when the grammar refuses it."""
        return bool(self._matcher.consume_token(token))

    @property
    def accepting(self) -> bool:
        """Whether the output may end here."""
        return bool(self._matcher.is_accepting())

    @property
    def finished(self) -> bool:
        """Whether the grammar allows nothing more (it has matched its whole output)."""
        return bool(self._matcher.is_stopped())


class Guidance:
    """llguidance over one vocabulary (see the module docstring). Thread-safe."""

    _shared: ClassVar[dict[int, tuple[object, Guidance]]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, tokenizer: ModelTokenizer | None = None) -> None:
        vocabulary = _Vocabulary(tokenizer)
        self.vocab_size = len(vocabulary.tokens)
        self.tokenizer = llg.LLTokenizer(llg.TokenizerWrapper(vocabulary))
        self._compiled: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def of(cls, tokenizer: ModelTokenizer | None) -> Guidance:
        """The :class:`Guidance` of ``tokenizer`` (``None``: o200k_harmony), built once (about
        a second for a 200k vocabulary) and shared."""
        key = id(tokenizer)
        with cls._shared_lock:
            held = cls._shared.get(key)
            if held is not None and held[0] is tokenizer:
                return held[1]
        built = cls(tokenizer)
        with cls._shared_lock:
            cls._shared[key] = (tokenizer, built)
        return built

    def matcher(self, lark: str) -> GrammarMatcher:
        """A fresh matcher of ``lark`` for one generation; raises :class:`GrammarError`
        when the grammar does not compile."""
        with self._lock:
            compiled = self._compiled.get(lark)
            if compiled is not None:
                self._compiled.move_to_end(lark)
                return GrammarMatcher(compiled.deep_copy(), self.vocab_size)
        compiled = llg.LLMatcher(self.tokenizer, llg.LLMatcher.grammar_from_lark(lark), log_level=0)
        if compiled.is_error():
            raise GrammarError(compiled.get_error())
        with self._lock:
            self._compiled[lark] = compiled
            if len(self._compiled) > CACHE_SIZE:
                self._compiled.popitem(last=False)
        return GrammarMatcher(compiled.deep_copy(), self.vocab_size)


class _ByteVocabulary:
    """One token per byte, an end token, then ``specials`` special tokens: enough to
    compile any grammar whose token references are renumbered into them."""

    def __init__(self, specials: int) -> None:
        self.tokens = [bytes([i]) for i in range(256)] + [b"<end>"]
        self.tokens += [f"<special {i}>".encode() for i in range(specials)]
        self.eos_token_id = 256
        self.bos_token_id = None
        self.special_token_ids = list(range(256, len(self.tokens)))

    def __call__(self, text: str) -> list[int]:
        return list(text.encode())


_TOKEN_REFERENCE: Final = re.compile(r"<\[(\d+)\]>")


@functools.lru_cache(maxsize=8)
def _checker(specials: int) -> Any:
    return llg.LLTokenizer(llg.TokenizerWrapper(_ByteVocabulary(specials)))


@functools.lru_cache(maxsize=CACHE_SIZE * 4)
def check_grammar(lark: str) -> str:
    """Whether ``lark`` compiles: ``""`` if it does, else llguidance's reason. The check
    needs no model vocabulary — token references are renumbered into a byte-level one — so
    a server checks a request's grammar before generation whatever engine samples it."""
    numbers: dict[str, int] = {}

    def renumbered(match: re.Match[str]) -> str:
        number = numbers.setdefault(match.group(1), 257 + len(numbers))
        return f"<[{number}]>"

    text = _TOKEN_REFERENCE.sub(renumbered, lark)
    size = 1 << max(len(numbers), 1).bit_length()
    return str(llg.LLMatcher.validate_grammar(llg.LLMatcher.grammar_from_lark(text), _checker(size)))


@functools.lru_cache(maxsize=CACHE_SIZE)
def _language(syntax: str, definition: str) -> Any:
    """A matcher of the language of a Lark grammar or a regular expression, over bytes."""
    if syntax == "lark":
        grammar = llg.LLMatcher.grammar_from_lark(definition)
    else:
        grammar = llg.LLMatcher.grammar_from_regex(definition)
    return llg.LLMatcher(_checker(1), grammar, log_level=0)


def check_language(syntax: str, definition: str) -> str:
    """Whether a custom tool's grammar compiles — a Lark grammar (``syntax`` ``"lark"``) or
    a regular expression (``"regex"``, llguidance's syntax: no look-around, no
    backreferences): ``""`` if it does, else why not."""
    if syntax == "lark":
        return check_grammar(definition)
    grammar = llg.LLMatcher.grammar_from_regex(definition)
    return str(llg.LLMatcher.validate_grammar(grammar, _checker(1)))


def in_language(syntax: str, definition: str, text: str) -> bool:
    """Whether ``text`` is in the language of ``definition``, a Lark grammar (``syntax``
    ``"lark"``) or a regular expression (``"regex"``), as the sampler reads them (a regular
    expression matches the whole text). ``False`` where the grammar does not compile."""
    matcher = _language(syntax, definition).deep_copy()
    if matcher.is_error():
        return False
    return bool(matcher.consume_tokens(list(text.encode())) and matcher.is_accepting())


def mask_stops(allowed: NDArray[np.bool_], matcher: GrammarMatcher, stops: Sequence[int]) -> None:
    """Allow the ``stops`` in ``allowed`` where the output may end (a template model's end
    of turn is a stop id the grammar does not name)."""
    if matcher.accepting:
        for token in stops:
            if 0 <= token < len(allowed):
                allowed[token] = True
