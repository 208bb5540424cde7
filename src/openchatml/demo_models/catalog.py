"""The demo models by name: ``tiny``, ``tiny-random`` and ``tiny-chat-<family>``, built on
first use.

``--model tiny`` serves the trained tiny gpt-oss of :mod:`.tiny_trained` (it speaks
Harmony: greets, calls a weather tool, answers from its output); ``--model tiny-random``
the random-weight gpt-oss of :mod:`.tiny_random`; ``--model tiny-chat-qwen3`` and
``tiny-chat-llama`` serve a random-weight model of that family around the chat template
shipped in ``templates/``
(ChatML with ``<think>`` and ``<tool_call>`` for Qwen3; Llama 3 headers with bare JSON
calls for Llama), built by :mod:`.tiny_chat`. The folders are cached under
``<home>/models``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Final

from .tiny_chat import FAMILIES, TINY_CHAT_PREFIX

TINY: Final = "tiny"
"""The trained tiny gpt-oss (Harmony, the real o200k_harmony tokenizer)."""
TINY_RANDOM: Final = "tiny-random"
"""The random-weight gpt-oss (Harmony, the real o200k_harmony tokenizer)."""
CHAT_PREFIX: Final = TINY_CHAT_PREFIX + "-"
"""``tiny-chat-<family>``: a random-weight model of a template family."""


def demo_model_names() -> tuple[str, ...]:
    """Every name :func:`ensure_demo_model` accepts."""
    return (TINY, TINY_RANDOM, *(CHAT_PREFIX + family for family in FAMILIES))


def is_demo_model(name: str) -> bool:
    """Whether ``name`` names a demo model (not a folder or hub id)."""
    return name in demo_model_names()


def family_template(family: str) -> str:
    """The chat template text shipped for ``family`` (a key of :data:`.tiny_chat.FAMILIES`).
    Raises ``KeyError`` for a family without one."""
    if family not in FAMILIES:
        raise KeyError(family)
    return resources.files(__package__).joinpath("templates", f"{family}.jinja").read_text(encoding="utf-8")


def ensure_demo_model(name: str, home: Path | None) -> Path:
    """Build the demo model ``name`` under ``home`` unless it is there; return its folder.

    ``home`` defaults to ``$OPENCHATML_HOME`` or ``~/.cache/openchatml``. Raises ``KeyError``
    for a name that is not a demo model, :class:`~openchatml.engines.base.EngineError` when
    torch/transformers are missing (tiny-chat models) or the build fails."""
    if name == TINY:
        from .tiny_trained import ensure_trained_model

        return ensure_trained_model(home)
    if name == TINY_RANDOM:
        from .tiny_random import ensure_tiny_model

        return ensure_tiny_model(home)
    if name.startswith(CHAT_PREFIX) and name[len(CHAT_PREFIX) :] in FAMILIES:
        from .tiny_chat import ensure_tiny_chat_model

        family = name[len(CHAT_PREFIX) :]
        return ensure_tiny_chat_model(home, family_template(family), family=family, name=family)
    raise KeyError(name)
