"""The model families a tiny chat model can take: architecture and special tokens."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class ChatFamily:
    """What a model family fixes: its architecture and the special tokens of its tokenizers."""

    config_class: str
    """The ``transformers`` config class (``Qwen3Config``)."""
    model_class: str
    """The ``transformers`` causal-LM class (``Qwen3ForCausalLM``)."""
    tokens: tuple[str, ...]
    """Special tokens every tokenizer of the family carries, whether or not the template names them."""
    eos_token: str
    """The token that ends an assistant turn: the tokenizer's ``eos_token``."""
    pad_token: str
    """The tokenizer's ``pad_token``."""
    stop_tokens: tuple[str, ...]
    """The generation config's ``eos_token_id`` list, in order."""
    bos_token: str | None = None
    """The tokenizer's ``bos_token``, prepended by its post-processor; ``None``: no BOS."""
    rope_theta: float = 10000.0
    """The RoPE base of the family's released configs."""


FAMILIES: Final[Mapping[str, ChatFamily]] = {
    "qwen3": ChatFamily(
        config_class="Qwen3Config",
        model_class="Qwen3ForCausalLM",
        tokens=("<|endoftext|>", "<|im_start|>", "<|im_end|>"),
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        stop_tokens=("<|im_end|>", "<|endoftext|>"),
        rope_theta=1000000.0,
    ),
    "llama": ChatFamily(
        config_class="LlamaConfig",
        model_class="LlamaForCausalLM",
        tokens=(
            "<|begin_of_text|>",
            "<|end_of_text|>",
            "<|start_header_id|>",
            "<|end_header_id|>",
            "<|eom_id|>",
            "<|eot_id|>",
            "<|python_tag|>",
            "<|finetune_right_pad_id|>",
        ),
        eos_token="<|eot_id|>",
        pad_token="<|finetune_right_pad_id|>",
        stop_tokens=("<|end_of_text|>", "<|eom_id|>", "<|eot_id|>"),
        bos_token="<|begin_of_text|>",
        rope_theta=500000.0,
    ),
}
"""The families a tiny chat model can take, by name."""
