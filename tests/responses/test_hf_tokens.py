"""Token bytes of Hugging Face tokenizers: exact, also where a token splits a character.

Byte-level tokenizers (the tiny gpt-oss's o200k_harmony, the tiny Qwen3's BPE) and a
SentencePiece-style one with byte fallback: the bytes of the tokens of any text add up
to the text's UTF-8 (with SentencePiece's leading space), and o200k_harmony's agree with
the core codec's own token table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openchatml import load_encoding
from openchatml.responses.hf_tokens import HFVocabulary, token_bytes_reader

transformers = pytest.importorskip("transformers")
TEMPLATES = Path(__file__).parents[1] / "templates" / "data" / "templates"
TEXTS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@pytest.fixture(scope="module")
def harmony_tokenizer() -> Any:
    from openchatml.demo_models.tiny_random import ensure_tiny_model

    return transformers.AutoTokenizer.from_pretrained(ensure_tiny_model())


@pytest.fixture(scope="module")
def qwen_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from openchatml.demo_models.tiny_chat import ensure_tiny_chat_model

    folder = ensure_tiny_chat_model(tmp_path_factory.mktemp("home"), TEMPLATES / "Qwen-Qwen3-0.6B.jinja")
    return transformers.AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module")
def sentencepiece_tokenizer() -> Any:
    """A BPE with byte fallback, ``▁`` for spaces, and a decoder as Llama 2's."""
    from tokenizers import Tokenizer, decoders, models, normalizers

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    vocab.update({f"<0x{b:02X}>": 3 + b for b in range(256)})
    for piece in ("▁", "h", "e", "l", "o", "w", "é", "▁h", "ll", "▁he", "▁hell", "▁w"):
        vocab.setdefault(piece, len(vocab))
    merges = [("▁", "h"), ("l", "l"), ("▁h", "e"), ("▁he", "ll"), ("▁", "w")]
    backend = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", byte_fallback=True))
    backend.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    backend.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )


def spelled(tokenizer: Any, text: str) -> bytes:
    read = token_bytes_reader(tokenizer)
    return b"".join(read(t) for t in tokenizer.encode(text, add_special_tokens=False))


@settings(max_examples=200, deadline=None)
@given(text=TEXTS)
def test_byte_level_tokens_add_up_to_the_text(harmony_tokenizer: Any, qwen_tokenizer: Any, text: str) -> None:
    assert spelled(harmony_tokenizer, text) == text.encode()
    assert spelled(qwen_tokenizer, text) == text.encode()


def test_split_characters_have_their_own_bytes(qwen_tokenizer: Any) -> None:
    text = "héllo → 世界"
    ids = qwen_tokenizer.encode(text, add_special_tokens=False)
    read = token_bytes_reader(qwen_tokenizer)
    pieces = [read(t) for t in ids]
    # decode() of one id cannot say these: it gives the replacement character
    assert any(qwen_tokenizer.decode([t]) == "\ufffd" for t in ids)
    assert all(p and b"\xef\xbf\xbd" not in p for p in pieces)
    assert b"".join(pieces) == text.encode()


@settings(max_examples=100, deadline=None)
@given(text=TEXTS)
def test_o200k_harmony_bytes_equal_the_codec(harmony_tokenizer: Any, text: str) -> None:
    table = load_encoding().token_bytes
    read = token_bytes_reader(harmony_tokenizer)
    for token in harmony_tokenizer.encode(text, add_special_tokens=False):
        assert read(token) == table[token]


@settings(max_examples=200, deadline=None)
@given(text=TEXTS.filter(lambda t: "▁" not in t))
def test_sentencepiece_tokens_add_up_to_the_text(sentencepiece_tokenizer: Any, text: str) -> None:
    # the text as SentencePiece spells it: a space first, byte pieces for what it lacks
    assert spelled(sentencepiece_tokenizer, text) == (f" {text}".encode() if text else b"")


def test_markers_are_their_text_and_not_text_tokens(qwen_tokenizer: Any) -> None:
    vocabulary = HFVocabulary(qwen_tokenizer, ["<|im_start|>", "<|im_end|>"])
    start = qwen_tokenizer.convert_tokens_to_ids("<|im_start|>")
    assert vocabulary.token_bytes(start) == b"<|im_start|>"
    assert not vocabulary.is_text(start)
    word = qwen_tokenizer.encode("hello", add_special_tokens=False)[0]
    assert vocabulary.is_text(word)
