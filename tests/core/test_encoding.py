"""The offline o200k_harmony tokenizer."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from openchatml import ControlToken, load_encoding
from openchatml.core.encoding import O200K_BASE_SHA256, export_o200k_base
from openchatml.core.tokens import NAMED_SPECIAL_TOKENS, TOKEN_IDS, special_token_text


def test_export_writes_the_checked_ranks_once(tmp_path: Path) -> None:
    folder = export_o200k_base(tmp_path / "vocab")
    target = folder / "o200k_base.tiktoken"
    assert hashlib.sha256(target.read_bytes()).hexdigest() == O200K_BASE_SHA256
    stamp = target.stat().st_mtime_ns
    assert export_o200k_base(folder) == folder and target.stat().st_mtime_ns == stamp


def test_control_tokens_are_single_ids() -> None:
    enc = load_encoding()
    for token, tid in TOKEN_IDS.items():
        assert enc.encode(token.value, allowed_special="all") == [tid]
        assert enc.decode([tid]) == token.value
    assert ControlToken.LITERAL not in TOKEN_IDS  # OCM-only: spelled out in text


def test_special_text_is_ordinary_unless_allowed() -> None:
    enc = load_encoding()
    ids = enc.encode("<|start|>")
    assert 200006 not in ids and enc.decode(ids) == "<|start|>"
    assert enc.encode("a<|end|>b", allowed_special=frozenset({"<|end|>"}))[1] == 200007


def test_every_special_id_has_a_name() -> None:
    enc = load_encoding()
    assert len(enc.special_tokens) == 1091
    for text, tid in NAMED_SPECIAL_TOKENS.items():
        assert special_token_text(tid) == text
    assert special_token_text(200000) == "<|reserved_200000|>"
    assert enc.is_special_token(199998) and not enc.is_special_token(199997)
    with pytest.raises(ValueError):
        special_token_text(5)


@pytest.mark.parametrize("bad", [[-1], [201089], [1, 2**40]])
def test_decode_refuses_ids_outside_the_vocabulary(bad: list[int]) -> None:
    with pytest.raises(ValueError, match="outside o200k_harmony"):
        load_encoding().decode_bytes(bad)


def test_invalid_utf8_is_replaced_or_refused() -> None:
    enc = load_encoding()
    ids = enc.encode_ordinary("é")
    first = [t for t in range(199998) if enc.token_bytes[t] == "é".encode()[:1]]
    assert first and enc.decode(first) == "\ufffd"
    with pytest.raises(UnicodeDecodeError):
        enc.decode(first, errors="strict")
    assert enc.decode(ids) == "é"
