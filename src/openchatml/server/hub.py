"""A Hugging Face Hub model id, before the in-process engine loads it.

:func:`locate` is asked where to load a model named by a hub id (``openai/gpt-oss-20b``,
what ``openchatml serve`` serves without ``--model``) from:

* when the model is whole in the local Hugging Face cache: that snapshot's folder, loaded
  without asking the hub (``hf download ID`` updates it);
* else, with ``HF_HUB_OFFLINE`` set: :class:`HubError` at once;
* else the hub is asked, within :data:`HUB_TIMEOUT` seconds and once, what downloading
  the model takes. No answer (no network, a proxy in the way): :class:`HubError` at once,
  where transformers would retry for half a minute. No such model, a gated one, too
  little free disk for it: :class:`HubError` saying so. Otherwise ``say`` is told what
  will be downloaded (size, free disk, the memory its weights take) before the download
  starts, and the id is returned for transformers to download.

A name that is a local path, or no hub id, is returned as it is.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

HUB_TIMEOUT: Final = 5.0
"""Seconds the hub has to answer what a model's files are."""
WEIGHT_SUFFIXES: Final = (".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack", ".gguf", ".onnx", ".ckpt")
"""Files of weights: of those in a repository's top folder, transformers loads the
``.safetensors`` ones when there are any (else the ``.bin`` ones)."""
_HUB_ID: Final = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")


class HubError(Exception):
    """The model cannot be had from the hub now; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class Download:
    """What downloading a model takes: ``total`` bytes, ``weights`` of them its weights;
    ``quantized``: whether its config declares a quantisation (``mxfp4`` …), else ``""``."""

    total: int
    weights: int
    quantized: str = ""


def gigabytes(size: int) -> str:
    """``size`` bytes as ``13.8 GB``."""
    return f"{size / 1e9:.1f} GB"


def is_hub_id(name: str) -> bool:
    """Whether ``name`` reads as a hub id (``org/model`` or ``model``) and is no local path."""
    return _HUB_ID.fullmatch(name) is not None and not Path(name).exists()


def download_of(files: Iterable[tuple[str, int | None]], config: Any = None) -> Download:
    """What transformers downloads of a repository whose files are ``(path, size)``: the
    top folder's files, of its weights only the ``.safetensors`` (or, without any, the
    ``.bin``); ``config``: the model's config as the hub gives it."""
    top = [(path, size or 0) for path, size in files if "/" not in path]
    kind = ".safetensors" if any(p.endswith(".safetensors") for p, _ in top) else ".bin"
    weights = sum(size for path, size in top if path.endswith(kind))
    others = sum(size for path, size in top if not path.endswith(WEIGHT_SUFFIXES))
    quant = config.get("quantization_config") if isinstance(config, dict) else None
    method = quant.get("quant_method") if isinstance(quant, dict) else None
    quantized = str(method) if method else ("yes" if quant else "")
    return Download(total=weights + others, weights=weights, quantized=quantized)


def whole_snapshot(folder: Path) -> bool:
    """Whether ``folder`` (a cached snapshot) holds a config and every weight file its
    index names (or a weight file, without an index)."""
    if not (folder / "config.json").is_file():
        return False
    for index in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        path = folder / index
        if path.is_file():
            try:
                shards = set(json.loads(path.read_text())["weight_map"].values())
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                return False
            return all((folder / shard).is_file() for shard in shards)
    return any((folder / name).is_file() for name in ("model.safetensors", "pytorch_model.bin"))


def cached_snapshot(model: str) -> Path | None:
    """The folder of ``model``'s snapshot in the local Hugging Face cache, if it is whole there."""
    from huggingface_hub import snapshot_download

    try:
        folder = Path(str(snapshot_download(model, local_files_only=True)))
    except Exception:  # not cached (LocalEntryNotFoundError), or an id the hub library refuses
        return None
    return folder if whole_snapshot(folder) else None


def _free_bytes(where: Path) -> int | None:
    """Free bytes on the disk of ``where`` (its nearest existing folder)."""
    for folder in (where, *where.parents):
        if folder.exists():
            return shutil.disk_usage(folder).free
    return None


def ask_hub(model: str) -> Download:
    """What downloading ``model`` takes, from the hub (one request, :data:`HUB_TIMEOUT`).
    Raises :class:`HubError` when the hub does not answer, or has no such model for us."""
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    try:
        info = HfApi().model_info(model, files_metadata=True, timeout=HUB_TIMEOUT)
    except GatedRepoError:
        raise HubError(
            f"{model} is gated on the Hugging Face Hub: accept its terms on its page, then log in "
            "(`hf auth login`, or set HF_TOKEN)"
        ) from None
    except RepositoryNotFoundError:
        raise HubError(f"the Hugging Face Hub has no model {model} (a private one needs HF_TOKEN)") from None
    except HfHubHTTPError as exc:
        raise HubError(f"the Hugging Face Hub refused {model}: {_first_line(exc)}") from None
    except Exception as exc:  # no network: the hub library's transport errors
        raise HubError(
            f"cannot reach the Hugging Face Hub at {constants.ENDPOINT} to download {model} "
            f"({type(exc).__name__}: {_first_line(exc)}): no network? Download it where there is one "
            "(`hf download ID`, into the cache HF_HOME names)"
        ) from None
    files = [(s.rfilename, s.size) for s in info.siblings or ()]
    return download_of(files, info.config)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def locate(model: str, say: Callable[[str], None]) -> str | Path:
    """Where to load ``model`` from: a cached snapshot's folder, or the hub id to download
    (said first, see the module docstring). Raises :class:`HubError`."""
    if not is_hub_id(model):
        return model
    try:
        from huggingface_hub import constants
    except ImportError:  # the engine's own error says what to install
        return model
    folder = cached_snapshot(model)
    if folder is not None:
        return folder
    cache = Path(constants.HF_HUB_CACHE)
    if constants.HF_HUB_OFFLINE:
        raise HubError(
            f"{model} is not in the Hugging Face cache ({cache}) and HF_HUB_OFFLINE is set: "
            "download it where there is a network (`hf download ID`)"
        )
    need = ask_hub(model)
    free = _free_bytes(cache)
    if free is not None and free < need.total:
        raise HubError(
            f"{model} needs {gigabytes(need.total)} of disk in {cache}; only {gigabytes(free)} is free "
            "(HF_HOME moves the cache)"
        )
    room = f" ({gigabytes(free)} free there)" if free is not None else ""
    memory = f"its weights take about {gigabytes(need.weights)} of memory (GPU or RAM)"
    if need.quantized:
        memory += (
            f"; they are quantised ({need.quantized}), and take several times that where the device "
            "cannot run them so (on CPU)"
        )
    say(f"{model} is not in the Hugging Face cache: downloading {gigabytes(need.total)} into {cache}{room}")
    say(f"{memory} …")
    return model
