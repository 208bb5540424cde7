"""The trained tiny gpt-oss: shipped as compact weights, expanded into a Hugging Face folder.

``weights/tiny-gpt-oss.safetensors`` (a few MB, in the package) holds what
:mod:`.tiny_training` trained: the transformer's layers, the embedding and output rows of
the ids its dialogues use (``token_ids``), and one extra row for every other id, with the
recipe and the measured numbers in its metadata. :func:`ensure_trained_model` expands it
once into ``$OPENCHATML_HOME/models/tiny-gpt-oss-trained-<digest>``: a normal gpt-oss
folder over the full 201,088-id vocabulary and the real o200k_harmony tokenizer, which
``transformers`` loads like any checkpoint. :func:`save_trained` writes the shipped file
from a fresh training run.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any, Final

from ..engines.base import EngineError
from .folders import install_folder, models_home
from .tiny_random import (
    CONTEXT_LENGTH,
    ENDOFTEXT_ID,
    EOS_TOKEN_IDS,
    ROPE_SCALING,
    ROPE_THETA,
    STARTOFTEXT_ID,
    write_legacy_rope,
    write_tokenizer,
)
from .tiny_training import FULL_VOCAB, TinyRecipe, TrainedTiny, expand_state

WEIGHTS: Final = "tiny-gpt-oss.safetensors"
"""The shipped compact weights, in the package's ``weights`` folder."""
TRAINED_MODEL_NAME: Final = "tiny-gpt-oss-trained"
_STAMP: Final = "openchatml-tiny-trained.json"
_INSTALL_HINT: Final = "the tiny model needs torch and transformers: pip install 'openchatml[transformers]'"


def shipped_weights() -> Path:
    """The path of the shipped compact weights."""
    return Path(str(resources.files(__package__).joinpath("weights", WEIGHTS)))


def shipped_measures(path: Path | None = None) -> dict[str, Any]:
    """The recipe and numbers recorded with the compact weights at ``path`` (default: the
    shipped ones)."""
    from safetensors import safe_open

    with safe_open(str(path or shipped_weights()), framework="pt") as handle:
        meta = handle.metadata()
    return {"recipe": json.loads(meta["recipe"]), "measures": json.loads(meta["measures"])}


def save_trained(trained: TrainedTiny, path: Path) -> None:
    """Write ``trained`` as compact weights at ``path`` (float32, a tied output layer not
    repeated, its recipe and measures in the metadata)."""
    import dataclasses

    import torch
    from safetensors.torch import save_file

    tied = trained.recipe.tied  # the output layer is the embedding: stored once
    state = {name: t for name, t in trained.state.items() if not (tied and name == "lm_head.weight")}
    tensors = {name: tensor.to(torch.float32).contiguous() for name, tensor in state.items()}
    tensors["token_ids"] = torch.tensor(trained.token_ids, dtype=torch.int64)
    metadata = {
        "format": "pt",
        "recipe": json.dumps(dataclasses.asdict(trained.recipe), sort_keys=True),
        "measures": json.dumps(trained.measures, sort_keys=True),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata=metadata)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def trained_model_dir(home: Path | None = None, weights: Path | None = None) -> Path:
    """Where the expanded model of ``weights`` (default: the shipped ones) lives."""
    source = weights or shipped_weights()
    return models_home(home) / "models" / f"{TRAINED_MODEL_NAME}-{_digest(source)}"


def ensure_trained_model(home: Path | None = None, weights: Path | None = None) -> Path:
    """Expand ``weights`` (default: the shipped ones) into a model folder unless it is
    there; return the folder. Raises :class:`EngineError` when torch or transformers is
    missing or the weights file is absent."""
    source = weights or shipped_weights()
    if not source.is_file():
        raise EngineError(f"the trained tiny model's weights are missing: {source}")
    target = trained_model_dir(home, source)
    digest = _digest(source)
    if _is_current(target, digest):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    try:
        expand_into(source, work)
        (work / _STAMP).write_text(json.dumps({"weights": digest}) + "\n")
        work.chmod(0o755)
        install_folder(work, target, lambda folder: _is_current(folder, digest))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def expand_into(source: Path, folder: Path) -> None:
    """Write the full model of the compact weights ``source`` into the empty ``folder``."""
    try:
        import torch
        import transformers
        from safetensors.torch import load_file, save_file
    except ImportError as exc:
        raise EngineError(_INSTALL_HINT) from exc
    hf: Any = transformers
    compact = load_file(str(source))
    token_ids = compact.pop("token_ids").tolist()
    recipe = TinyRecipe(**shipped_measures(source)["recipe"])
    config = hf.GptOssConfig(
        **recipe.config(FULL_VOCAB),
        max_position_embeddings=CONTEXT_LENGTH,
        rope_parameters={**ROPE_SCALING, "rope_theta": ROPE_THETA},
        bos_token_id=STARTOFTEXT_ID,
        eos_token_id=EOS_TOKEN_IDS[0],
        pad_token_id=ENDOFTEXT_ID,
    )
    config.save_pretrained(folder)
    write_legacy_rope(folder / "config.json")
    hf.GenerationConfig(
        bos_token_id=STARTOFTEXT_ID, eos_token_id=list(EOS_TOKEN_IDS), pad_token_id=ENDOFTEXT_ID
    ).save_pretrained(folder)
    full = expand_state(compact, token_ids, torch)
    save_file(
        {k: v.contiguous() for k, v in full.items()},
        str(folder / "model.safetensors"),
        metadata={"format": "pt"},
    )
    write_tokenizer(folder)


def _is_current(folder: Path, digest: str) -> bool:
    try:
        stamp = json.loads((folder / _STAMP).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(stamp, dict) and stamp.get("weights") == digest
