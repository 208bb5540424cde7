"""Tiny random-weight chat models that carry a real (non-Harmony) chat template, for tests.

:func:`ensure_tiny_chat_model` builds one offline, in about a second, into
``$OPENCHATML_HOME/models/tiny-chat-<family>-<name>-<hash>``: a normal Hugging Face folder
(``config.json``, ``model.safetensors``, ``generation_config.json``, ``tokenizer.json``,
``tokenizer_config.json`` with the chat template, ``chat_template.jinja``) that
``AutoTokenizer``, ``AutoModelForCausalLM`` (transformers 4 or 5), vLLM and
:class:`~openchatml.engines.transformers.TransformersEngine` load like a real checkpoint of
its family (:data:`FAMILIES`, in :mod:`.families`: Qwen3 or Llama; 2 layers, hidden size 64).

The tokenizer (:mod:`.chat_tokenizer`) is a byte-level BPE (about 2,000 ids) trained on a
few KB of built-in English text and on the template's own renderings of a small
conversation (:mod:`.template_renders`), so any text round-trips exactly through
encode/decode. Its pre-tokenizer splits text into runs of
non-space characters with the whitespace that follows them (``"Hello, "``, ``"world\\n"``),
a run of whitespace at the start of a segment standing alone. The control markers are
added tokens, one id each: the family's own, those passed in ``special_tokens``, and those
found in the template text (:func:`template_markers`). ``<|…|>``, ``<｜…｜>`` and
``[UPPER]`` markers are special tokens, ``<tag>`` ones ordinary added tokens (as Qwen's
``<think>`` and ``<tool_call>``).

The weights are random (the same for the same inputs) except for a few hand-set embedding
and unembedding rows that give the model the shape of the template's assistant turn, read
from its renderings (:mod:`._turn_shape`) and described in ``openchatml-tiny-chat.json``:

- after the generation prompt it opens the reasoning block when the template has one
  (``<think>``/``</think>``, ``<|START_THINKING|>``/``<|END_THINKING|>``, ``[THINK]``/
  ``[/THINK]`` …; not when the prompt has already opened or closed it), writes words,
  closes it, then writes the token the template puts between reasoning and answer
  (``\\n\\n``);
- then answer words, ending the turn with the first marker the template writes after an
  answer (``<|im_end|>``, ``<|eot_id|>``), which is among the generation config's eos ids;
- now and then (about one turn in five when sampling, never greedily) a tool call instead:
  exactly the tokens the template renders for a call of :data:`CALL_NAME` with
  :data:`CALL_ARGUMENTS` (``<tool_call>\\n{"name": "lookup", "arguments": {"query":
  "tiny"}}\\n</tool_call>`` for Qwen3), then the end marker. A call that opens with a marker
  may follow answer words; a bare one (Llama 3.1's JSON) makes the whole turn (up to one
  turn in five). Templates whose call renders with repeated tokens get no call.

Words are drawn from a peaked random distribution over plain tokens (no brackets, braces,
quotes or backquotes), half of them for reasoning and half for answers. Each step ends a
block with a probability of about one in ten, so a block runs a few to a few dozen tokens;
greedy decoding writes about a dozen words of reasoning, about a dozen of answer, then the
end marker. The shape needs only the last token: two layers of small random weights leave
the last hidden state close to the embedding of the last token, as in
:mod:`openchatml.demo_models.tiny_random`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from ..engines.base import EngineError
from ._turn_shape import TurnShape, turn_end
from .chat_tokenizer import bare_tokenizer, save_tokenizer, template_markers, train_tokenizer, wrap_tokenizer
from .families import FAMILIES, ChatFamily
from .folders import install_folder, models_home
from .template_renders import CALL_ARGUMENTS, CALL_NAME, TemplateRenders

__all__ = [
    "CALL_ARGUMENTS",
    "CALL_NAME",
    "CONTEXT_LENGTH",
    "FAMILIES",
    "TINY_CHAT_PREFIX",
    "ChatFamily",
    "build_tiny_chat_model",
    "ensure_tiny_chat_model",
    "template_markers",
    "tiny_chat_model_dir",
]

TINY_CHAT_PREFIX: Final = "tiny-chat"
"""Folder names under ``$OPENCHATML_HOME/models`` start with this."""

CONTEXT_LENGTH: Final = 131072
"""The models' ``max_position_embeddings``: Llama 3.1's and gpt-oss's window, so a coding
agent's prompt fits."""
_RECIPE: Final = 3
_STAMP: Final = "openchatml-tiny-chat.json"
_INSTALL_HINT: Final = (
    "the tiny chat model needs torch and transformers: pip install 'openchatml[transformers]'"
)

_HEAD_DIM: Final = 32
"""Attention head width (vLLM's CPU attention has kernels for 32, not 16)."""
_ATTENTION_SCALE: Final = (16 / _HEAD_DIM) ** 0.5
"""Attention output weights scaled so that its noise stays that of 16-wide heads."""


def tiny_chat_model_dir(
    home: Path | None,
    template: str | os.PathLike[str],
    *,
    special_tokens: Sequence[str] = (),
    family: str = "qwen3",
    seed: int = 0,
    name: str | None = None,
) -> Path:
    """Where :func:`ensure_tiny_chat_model` keeps the model for these arguments (see
    there); nothing is built. Raises ``OSError`` when a template file cannot be read."""
    source, label = _source(template, name)
    key = _key(source, special_tokens, family, seed)
    return models_home(home) / "models" / f"{TINY_CHAT_PREFIX}-{family}-{label}-{key}"


def ensure_tiny_chat_model(
    home: Path | None,
    template: str | os.PathLike[str],
    *,
    special_tokens: Sequence[str] = (),
    family: str = "qwen3",
    seed: int = 0,
    name: str | None = None,
) -> Path:
    """Build the tiny chat model for ``template`` unless it is already there; return its folder.

    ``template`` is a path to a Jinja chat template (a path-like, or a string without
    ``{{``/``{%``) or the template text itself. ``home`` defaults to ``$OPENCHATML_HOME``
    or ``~/.cache/openchatml``; the folder is ``<home>/models/tiny-chat-<family>-<name>-<hash>``,
    ``name`` defaulting to the template file's stem (``template`` for a text), the hash
    covering the template text, ``special_tokens``, ``family``, ``seed`` and the recipe.
    The folder is built aside and renamed into place, so a reader never sees half a model.
    Raises :class:`EngineError` for an unknown family, a template the tokenizer cannot
    render, or a missing torch/transformers; ``OSError`` when a file cannot be read or written.
    """
    _family(family)
    source, _ = _source(template, name)
    target = tiny_chat_model_dir(
        home, template, special_tokens=special_tokens, family=family, seed=seed, name=name
    )
    key = target.name.rsplit("-", 1)[-1]
    if _is_current(target, key):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    try:
        build_tiny_chat_model(work, source, special_tokens=special_tokens, family=family, seed=seed)
        stamp = json.loads((work / _STAMP).read_text())
        stamp["key"] = key
        (work / _STAMP).write_text(json.dumps(stamp, indent=2, sort_keys=True) + "\n")
        install_folder(work, target, lambda folder: _is_current(folder, key))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def build_tiny_chat_model(
    folder: Path,
    chat_template: str,
    *,
    special_tokens: Sequence[str] = (),
    family: str = "qwen3",
    seed: int = 0,
) -> None:
    """Write the tiny chat model for the template text ``chat_template`` into the existing
    empty ``folder``: tokenizer (markers from the family, ``special_tokens`` and
    :func:`template_markers`), random weights for ``seed`` with the template's shape, and
    ``openchatml-tiny-chat.json`` describing that shape.

    Prefer :func:`ensure_tiny_chat_model`, which caches it. Raises :class:`EngineError` for
    an unknown family, a template that cannot render a user turn with a generation prompt,
    or a missing torch/transformers.
    """
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise EngineError(_INSTALL_HINT) from exc
    hf: Any = transformers
    spec = _family(family)
    markers = list(dict.fromkeys([*spec.tokens, *special_tokens, *template_markers(chat_template)]))
    renderer = wrap_tokenizer(bare_tokenizer(markers), chat_template, spec, CONTEXT_LENGTH)
    renders = TemplateRenders.of(renderer)
    tokenizer = wrap_tokenizer(
        train_tokenizer(markers, renders.corpus()), chat_template, spec, CONTEXT_LENGTH
    )
    end_marker = turn_end(renders, markers) or spec.eos_token
    shape = TurnShape.of(tokenizer, renders, markers, end_marker)
    vocab = len(tokenizer)

    config = getattr(hf, spec.config_class)(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=_HEAD_DIM,
        max_position_embeddings=CONTEXT_LENGTH,
        bos_token_id=_id(tokenizer, spec.bos_token),
        eos_token_id=_id(tokenizer, spec.eos_token),
        pad_token_id=_id(tokenizer, spec.pad_token),
        tie_word_embeddings=False,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = getattr(hf, spec.model_class)(config)
        with torch.no_grad():
            for layer in model.model.layers:  # attention as loud as with 16-wide heads
                layer.self_attn.o_proj.weight.mul_(_ATTENTION_SCALE)
            described = shape.apply(model.get_input_embeddings().weight, model.get_output_embeddings().weight)
    model = model.to(torch.bfloat16)
    stops = [_id(tokenizer, t) for t in dict.fromkeys([*spec.stop_tokens, end_marker])]
    model.generation_config = hf.GenerationConfig(
        bos_token_id=_id(tokenizer, spec.bos_token),
        eos_token_id=stops,
        pad_token_id=_id(tokenizer, spec.pad_token),
    )
    bars = hf.utils.logging.is_progress_bar_enabled()
    hf.utils.logging.disable_progress_bar()
    try:
        model.save_pretrained(folder)
    finally:
        if bars:
            hf.utils.logging.enable_progress_bar()
    _write_legacy_rope(folder / "config.json", spec.rope_theta)
    save_tokenizer(tokenizer, folder, chat_template, spec, CONTEXT_LENGTH)
    stamp = {"recipe": _RECIPE, "family": family, "seed": seed, "markers": markers, "shape": described}
    (folder / _STAMP).write_text(json.dumps(stamp, indent=2, sort_keys=True) + "\n")
    folder.chmod(0o755)


def _family(family: str) -> ChatFamily:
    try:
        return FAMILIES[family]
    except KeyError:
        known = ", ".join(sorted(FAMILIES))
        raise EngineError(f"unknown model family {family!r}: use one of {known}") from None


def _source(template: str | os.PathLike[str], name: str | None) -> tuple[str, str]:
    """The template text and the folder label for ``template`` (a path or the text)."""
    if isinstance(template, str) and ("{{" in template or "{%" in template):
        source, stem = template, "template"
    else:
        path = Path(template)
        source, stem = path.read_text(encoding="utf-8"), path.stem
    label = re.sub(r"[^A-Za-z0-9._]+", "-", name or stem).strip("-.") or "template"
    return source, label[:60]


def _key(source: str, special_tokens: Sequence[str], family: str, seed: int) -> str:
    data = json.dumps([_RECIPE, source, list(special_tokens), family, seed], ensure_ascii=False)
    return hashlib.sha256(data.encode()).hexdigest()[:12]


def _id(tokenizer: Any, token: str | None) -> int | None:
    return None if token is None else int(tokenizer.convert_tokens_to_ids(token))


def _write_legacy_rope(path: Path, theta: float) -> None:
    """Spell RoPE as released Qwen3 and Llama configs do (``rope_theta``), which every reader understands."""
    config = json.loads(path.read_text())
    config.pop("rope_parameters", None)
    config["rope_theta"] = theta
    config["rope_scaling"] = None
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def _is_current(folder: Path, key: str) -> bool:
    try:
        stamp = json.loads((folder / _STAMP).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(stamp, dict) and stamp.get("recipe") == _RECIPE and stamp.get("key") == key
