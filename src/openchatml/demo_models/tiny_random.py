"""A tiny random-weight gpt-oss model with the real o200k_harmony tokenizer, for tests.

:func:`ensure_tiny_model` builds it once, offline and in seconds, into
``$OPENCHATML_HOME/models/tiny-gpt-oss``: a normal Hugging Face folder (``config.json``,
``model.safetensors``, ``tokenizer.json``, ``tokenizer_config.json``,
``generation_config.json``) that ``transformers`` and vLLM load like any gpt-oss
checkpoint. Its token ids are exactly those of :func:`openchatml.load_encoding`.

Its weights are random (the same for the same seed) except for a few hand-set rows that
give it the shape of Harmony (:data:`SHAPE`): after ``assistant`` it opens a channel
(``final``, ``analysis`` or ``commentary``), then ``<|message|>``, then words drawn from a
peaked random distribution, ending a message now and then with ``<|end|>`` (and a new
``<|start|>assistant``) or the turn with ``<|return|>``. So a server over it streams real
reasoning and message items made of noise; greedy decoding writes a ``final`` answer.
"""

from __future__ import annotations

import base64
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, Final

from ..core.encoding import O200K_PATTERN, o200k_base_bytes
from ..core.tokens import (
    CALL_ID,
    CHANNEL_ID,
    END_ID,
    FIRST_SPECIAL_ID,
    MESSAGE_ID,
    RETURN_ID,
    START_ID,
    special_token_text,
)
from ..engines.base import EngineError
from .folders import install_folder, models_home

TINY_MODEL_NAME: Final = "tiny-gpt-oss"
"""The folder name of the tiny model under ``$OPENCHATML_HOME/models``."""

VOCAB_SIZE: Final = 201088
"""gpt-oss's vocabulary: o200k_base (0–199997) and the Harmony specials (199998–201087)."""

STARTOFTEXT_ID: Final = 199998
ENDOFTEXT_ID: Final = 199999
EOS_TOKEN_IDS: Final = (RETURN_ID, CALL_ID, ENDOFTEXT_ID)
"""``<|return|>``, ``<|call|>`` and ``<|endoftext|>``: the generation config's eos ids."""

CONTEXT_LENGTH: Final = 131072
"""gpt-oss's window: yarn stretches 4,096 trained positions 32 times."""

_RECIPE: Final = 3

_ASSISTANT, _ANALYSIS, _FINAL, _COMMENT, _ARY = 173781, 35644, 17196, 12606, 815
SHAPE: Final[dict[int, dict[int, float]]] = {
    _ASSISTANT: {CHANNEL_ID: 25.0},
    CHANNEL_ID: {_FINAL: 25.5, _ANALYSIS: 25.0, _COMMENT: 24.5},
    _FINAL: {MESSAGE_ID: 25.0},
    _ANALYSIS: {MESSAGE_ID: 25.0},
    _COMMENT: {_ARY: 25.0},
    _ARY: {MESSAGE_ID: 25.0},
    END_ID: {START_ID: 25.0},
    START_ID: {_ASSISTANT: 25.0},
}
"""Token → the logits it gives the tokens that may follow it (``assistant``, ``analysis``,
``final``, ``comment`` + ``ary`` are their o200k ids). Any other token gives about 11 to
``<|end|>`` and 10 to ``<|return|>``, against words whose logits spread with a standard
deviation of 3: a message runs a few hundred tokens."""
_TEXT_END: Final = {END_ID: 11.0, RETURN_ID: 10.0}
_TEXT_SPREAD: Final = 3.0
_STAMP: Final = "openchatml-tiny.json"
_INSTALL_HINT: Final = "the tiny model needs torch and transformers: pip install 'openchatml[transformers]'"

ROPE_SCALING: Final[dict[str, Any]] = {
    "rope_type": "yarn",
    "factor": 32.0,
    "beta_fast": 32.0,
    "beta_slow": 1.0,
    "truncate": False,
    "original_max_position_embeddings": CONTEXT_LENGTH // 32,
}
ROPE_THETA: Final = 150000.0


def tiny_model_dir(home: Path | None = None, *, seed: int = 0) -> Path:
    """Where the tiny model for ``seed`` lives: ``<home>/models/tiny-gpt-oss`` (seed 0) or
    ``…/tiny-gpt-oss-seed<N>``; ``home`` defaults to ``$OPENCHATML_HOME`` or
    ``~/.cache/openchatml``. Nothing is built."""
    name = TINY_MODEL_NAME if seed == 0 else f"{TINY_MODEL_NAME}-seed{seed}"
    return models_home(home) / "models" / name


def ensure_tiny_model(home: Path | None = None, *, seed: int = 0) -> Path:
    """Build the tiny model for ``seed`` unless it is already there; return its folder.

    The folder is built aside and renamed into place, so a reader never sees half a model
    and racing processes end with one complete copy. Raises :class:`EngineError` when
    torch or transformers is missing, ``OSError`` when the folder cannot be written.
    """
    target = tiny_model_dir(home, seed=seed)
    if _is_current(target, seed):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    try:
        build_tiny_model(work, seed=seed)
        install_folder(work, target, lambda folder: _is_current(folder, seed))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def build_tiny_model(folder: Path, *, seed: int = 0) -> None:
    """Write the tiny model for ``seed`` into the existing empty ``folder``.

    Prefer :func:`ensure_tiny_model`, which caches it. Raises :class:`EngineError` when
    torch or transformers is missing.
    """
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise EngineError(_INSTALL_HINT) from exc
    hf: Any = transformers

    config = hf.GptOssConfig(
        vocab_size=VOCAB_SIZE,
        hidden_size=64,
        intermediate_size=64,
        head_dim=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_local_experts=4,
        num_experts_per_tok=2,
        sliding_window=128,
        max_position_embeddings=CONTEXT_LENGTH,
        rope_parameters={**ROPE_SCALING, "rope_theta": ROPE_THETA},
        bos_token_id=STARTOFTEXT_ID,
        eos_token_id=RETURN_ID,
        pad_token_id=ENDOFTEXT_ID,
        tie_word_embeddings=False,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = hf.GptOssForCausalLM(config)
        with torch.no_grad():
            _shape_weights(model.get_input_embeddings().weight, model.get_output_embeddings().weight)
    model = model.to(torch.bfloat16)
    model.generation_config = hf.GenerationConfig(
        bos_token_id=STARTOFTEXT_ID, eos_token_id=list(EOS_TOKEN_IDS), pad_token_id=ENDOFTEXT_ID
    )
    bars = hf.utils.logging.is_progress_bar_enabled()
    hf.utils.logging.disable_progress_bar()
    try:
        model.save_pretrained(folder)
    finally:
        if bars:
            hf.utils.logging.enable_progress_bar()
    write_legacy_rope(folder / "config.json")
    write_tokenizer(folder)
    (folder / _STAMP).write_text(json.dumps({"recipe": _RECIPE, "seed": seed}) + "\n")
    folder.chmod(0o755)


def _shape_weights(embed: Any, unembed: Any) -> None:
    """Set the embedding and unembedding rows that give the model the shape of Harmony.

    Through two layers of small random weights, the last hidden state stays close to the
    embedding of the last token, so its logits are, to a good approximation, ``unembed @
    rmsnorm(embed[token])``. Dimension ``k`` of the first ``len(SHAPE)`` ones is a switch,
    the only one ``SHAPE``'s ``k``-th token has (its next tokens read it); one more
    dimension is on for every other token (``<|end|>`` and ``<|return|>`` read it), whose
    other dimensions are N(0, 1) noise that spreads the logits of words.
    """
    size = embed.shape[1]
    text_dim = len(SHAPE)
    noise = size - text_dim - 1
    on = 4.0
    embed.normal_(0.0, 1.0)
    embed[:, : text_dim + 1] = 0.0
    embed[:, text_dim] = on
    unembed.normal_(0.0, _TEXT_SPREAD / noise**0.5)
    unembed[:, : text_dim + 1] = 0.0
    for k, (token, targets) in enumerate(SHAPE.items()):
        embed[token] = 0.0
        embed[token, k] = on
        for target, logit in targets.items():
            unembed[target, k] = logit / size**0.5  # a lone switch is sqrt(size) after RMSNorm
    text_on = on / ((on * on + noise) / size) ** 0.5  # the text switch after RMSNorm
    for target, logit in _TEXT_END.items():
        unembed[target, text_dim] = logit / text_on


def write_legacy_rope(path: Path) -> None:
    """Spell RoPE as the released gpt-oss config does, which every reader understands."""
    config = json.loads(path.read_text())
    config.pop("rope_parameters", None)
    config["rope_scaling"] = dict(ROPE_SCALING)
    config["rope_theta"] = ROPE_THETA
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def write_tokenizer(folder: Path) -> None:
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks: dict[bytes, int] = {}
    for line in o200k_base_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)

    class _Converter(TikTokenConverter):
        @staticmethod
        def load_tiktoken_bpe(tiktoken_url: str) -> dict[bytes, int]:
            return ranks

    specials = [special_token_text(i) for i in range(FIRST_SPECIAL_ID, VOCAB_SIZE)]
    converter = _Converter(vocab_file="", pattern=O200K_PATTERN, extra_special_tokens=specials)  # type: ignore[no-untyped-call]
    tokenizer = converter.converted()
    if tokenizer.get_vocab_size() != VOCAB_SIZE:  # pragma: no cover - guards the id layout
        raise EngineError(f"tiny tokenizer has {tokenizer.get_vocab_size()} ids, expected {VOCAB_SIZE}")
    tokenizer.save(str(folder / "tokenizer.json"))
    named = {
        "bos_token": special_token_text(STARTOFTEXT_ID),
        "eos_token": special_token_text(RETURN_ID),
        "pad_token": special_token_text(ENDOFTEXT_ID),
    }
    added = {
        str(i): {
            "content": text,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for i, text in enumerate(specials, start=FIRST_SPECIAL_ID)
    }
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        **named,
        "model_max_length": CONTEXT_LENGTH,
        "clean_up_tokenization_spaces": False,
        "model_input_names": ["input_ids", "attention_mask"],
        "added_tokens_decoder": added,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2) + "\n")
    (folder / "special_tokens_map.json").write_text(json.dumps(named, indent=2) + "\n")


def _is_current(folder: Path, seed: int) -> bool:
    try:
        stamp = json.loads((folder / _STAMP).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(stamp, dict) and stamp.get("recipe") == _RECIPE and stamp.get("seed") == seed
