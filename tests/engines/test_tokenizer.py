"""HFTokenizer: a Hugging Face tokenizer as the model's tokenizer, over the tiny gpt-oss
(o200k_harmony, no chat template) and the tiny chat models (Qwen3, Llama 3.1).

Token bytes are exact, also where a token splits a character: byte-level tokenizers
(o200k_harmony, the tiny Qwen3's BPE) and a SentencePiece-style one with byte fallback
spell any text's UTF-8 (with SentencePiece's leading space), and o200k_harmony's agree
with the core codec's own token table. Markers are the added tokens (not whitespace),
with their ids; the stop ids come from the generation config, else the eos token.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openchatml import load_encoding
from openchatml.engines.base import EngineError
from openchatml.engines.tokenizer import HFTokenizer

transformers = pytest.importorskip("transformers")
TEMPLATES = Path(__file__).parents[1] / "templates" / "data" / "templates"
QWEN3 = TEMPLATES / "Qwen-Qwen3-0.6B.jinja"
LLAMA = TEMPLATES / "meta-llama-Llama-3.1-8B-Instruct.jinja"
TEXTS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@pytest.fixture(scope="module")
def harmony_dir() -> Path:
    from openchatml.demo_models.tiny_random import ensure_tiny_model

    return ensure_tiny_model()


@pytest.fixture(scope="module")
def chat_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="module")
def qwen_dir(chat_home: Path) -> Path:
    from openchatml.demo_models.tiny_chat import ensure_tiny_chat_model

    return ensure_tiny_chat_model(chat_home, QWEN3)


@pytest.fixture(scope="module")
def llama_dir(chat_home: Path) -> Path:
    from openchatml.demo_models.tiny_chat import ensure_tiny_chat_model

    return ensure_tiny_chat_model(chat_home, LLAMA, family="llama")


@pytest.fixture(scope="module")
def harmony(harmony_dir: Path) -> HFTokenizer:
    return HFTokenizer.load(harmony_dir)


@pytest.fixture(scope="module")
def qwen(qwen_dir: Path) -> HFTokenizer:
    return HFTokenizer.load(qwen_dir)


@pytest.fixture(scope="module")
def llama(llama_dir: Path) -> HFTokenizer:
    return HFTokenizer.load(llama_dir)


@pytest.fixture(scope="module")
def sentencepiece() -> HFTokenizer:
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
    return HFTokenizer(
        transformers.PreTrainedTokenizerFast(
            tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
        )
    )


def spelled(tokenizer: HFTokenizer, text: str) -> bytes:
    return b"".join(tokenizer.token_bytes(t) for t in tokenizer.encode(text))


def generation_eos(folder: Path) -> tuple[int, ...]:
    eos = json.loads((folder / "generation_config.json").read_text())["eos_token_id"]
    return tuple(eos if isinstance(eos, list) else [eos])


# --- token bytes --------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(text=TEXTS)
def test_byte_level_tokens_add_up_to_the_text(harmony: HFTokenizer, qwen: HFTokenizer, text: str) -> None:
    assert spelled(harmony, text) == text.encode()
    assert spelled(qwen, text) == text.encode()


def test_split_characters_have_their_own_bytes(qwen: HFTokenizer) -> None:
    text = "héllo → 世界"
    ids = qwen.encode(text)
    pieces = [qwen.token_bytes(t) for t in ids]
    # decode() of one id cannot say these: it gives the replacement character
    assert any(qwen.decode([t]) == "\ufffd" for t in ids)
    assert all(p and b"\xef\xbf\xbd" not in p for p in pieces)
    assert b"".join(pieces) == text.encode()


@settings(max_examples=100, deadline=None)
@given(text=TEXTS)
def test_o200k_harmony_bytes_equal_the_codec(harmony: HFTokenizer, text: str) -> None:
    table = load_encoding().token_bytes
    for token in harmony.encode(text):
        assert harmony.token_bytes(token) == table[token]


@settings(max_examples=200, deadline=None)
@given(text=TEXTS.filter(lambda t: "▁" not in t))
def test_sentencepiece_tokens_add_up_to_the_text(sentencepiece: HFTokenizer, text: str) -> None:
    # the text as SentencePiece spells it: a space first, byte pieces for what it lacks
    assert spelled(sentencepiece, text) == (f" {text}".encode() if text else b"")


def test_markers_are_their_text_and_not_text_tokens(qwen: HFTokenizer) -> None:
    start = qwen.markers["<|im_start|>"]
    assert qwen.token_bytes(start) == b"<|im_start|>"
    assert qwen.is_marker(start)
    word = qwen.encode("hello")[0]
    assert not qwen.is_marker(word)


# --- markers, encoding, decoding ----------------------------------------------------------


@pytest.mark.parametrize("name", ["harmony", "qwen", "llama"])
def test_markers_are_the_added_tokens_longest_first(name: str, request: pytest.FixtureRequest) -> None:
    tokenizer: HFTokenizer = request.getfixturevalue(name)
    added = tokenizer.hf_tokenizer.get_added_vocab()
    markers = tokenizer.markers
    assert dict(markers) == {t: i for t, i in added.items() if t.strip()}
    lengths = [len(t) for t in markers]
    assert lengths == sorted(lengths, reverse=True)
    assert all(tokenizer.is_marker(i) for i in markers.values())
    assert not any(tokenizer.is_marker(i) for i in tokenizer.encode("plain words, no markers"))
    assert tokenizer.vocab_size == len(tokenizer.hf_tokenizer)
    assert max(markers.values()) < tokenizer.vocab_size


def test_qwen3_markers_and_template(qwen: HFTokenizer) -> None:
    hf = qwen.hf_tokenizer
    for marker in ("<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>"):
        assert qwen.markers[marker] == hf.convert_tokens_to_ids(marker)
    assert qwen.chat_template == QWEN3.read_text() == hf.chat_template
    assert (qwen.bos_token, qwen.eos_token) == ("", "<|im_end|>")


def test_harmony_ids_are_o200k_harmony(harmony: HFTokenizer) -> None:
    encoding = load_encoding()
    text = "<|start|>user<|message|>héllo 世界<|end|><|start|>assistant"
    assert harmony.encode(text) == encoding.encode(text, allowed_special="all")
    assert harmony.markers["<|start|>"] == 200006
    assert harmony.chat_template is None  # the tiny gpt-oss carries none: Harmony
    assert harmony.decode(harmony.encode(text)) == text


def test_encode_adds_no_bos_and_decode_keeps_markers(llama: HFTokenizer) -> None:
    bos = llama.markers["<|begin_of_text|>"]
    assert llama.bos_token == "<|begin_of_text|>"
    assert llama.hf_tokenizer("hi there").input_ids[0] == bos  # transformers adds it by default
    ids = llama.encode("hi there")
    assert bos not in ids and llama.decode(ids) == "hi there"
    marked = llama.encode("a<|eot_id|>b")
    assert llama.markers["<|eot_id|>"] in marked
    assert llama.decode(marked) == "a<|eot_id|>b"


def test_stop_ids_come_from_the_generation_config(
    harmony_dir: Path,
    qwen_dir: Path,
    llama_dir: Path,
    harmony: HFTokenizer,
    qwen: HFTokenizer,
    llama: HFTokenizer,
) -> None:
    assert harmony.stop_token_ids == generation_eos(harmony_dir) == (200002, 200012, 199999)
    assert qwen.stop_token_ids == generation_eos(qwen_dir)
    assert llama.stop_token_ids == generation_eos(llama_dir)
    assert llama.markers["<|eot_id|>"] in llama.stop_token_ids


def test_without_a_generation_config_the_eos_token_stops(qwen: HFTokenizer, tmp_path: Path) -> None:
    qwen.hf_tokenizer.save_pretrained(tmp_path)
    alone = HFTokenizer.load(tmp_path)
    assert alone.stop_token_ids == (qwen.markers["<|im_end|>"],)
    assert HFTokenizer(qwen.hf_tokenizer, stop_token_ids=[7, 8]).stop_token_ids == (7, 8)


def test_a_named_set_of_templates_gives_the_default(qwen: HFTokenizer) -> None:
    class Named:
        eos_token_id = None

        def __init__(self) -> None:
            self.chat_template = {"default": "{{ messages }}", "tool_use": "{{ tools }}"}

        def get_added_vocab(self) -> dict[str, int]:
            return {"<|x|>": 3, "\n\n": 4}

        def __len__(self) -> int:
            return 5

    named = HFTokenizer(Named())
    assert named.chat_template == "{{ messages }}"
    assert dict(named.markers) == {"<|x|>": 3}  # a run of whitespace is text
    assert not named.is_marker(4)
    assert named.stop_token_ids == ()


def test_a_tokenizer_that_cannot_load_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="cannot load the tokenizer"):
        HFTokenizer.load(tmp_path / "missing")


def test_a_model_and_its_tokenizer_load_together(qwen_dir: Path, qwen: HFTokenizer) -> None:
    """The transformers engine gives its folder's tokenizer, ended by the model's eos ids,
    unless it is handed one."""
    pytest.importorskip("torch")
    from openchatml.engines.transformers import TransformersEngine

    engine = TransformersEngine.load(qwen_dir, device="cpu")
    tokenizer: Any = engine.tokenizer
    assert isinstance(tokenizer, HFTokenizer)
    assert tokenizer.stop_token_ids == generation_eos(qwen_dir)
    assert tokenizer.chat_template == qwen.chat_template
    given_engine = TransformersEngine.load(qwen_dir, device="cpu", tokenizer=qwen)
    assert given_engine.tokenizer is qwen
