"""Tokenizers for the template families the training tests check: a small byte-level BPE
with the template's markers, saved as a Hugging Face folder that both ``HFTokenizer`` and
``AutoTokenizer`` load (no weights, no download)."""

from __future__ import annotations

from pathlib import Path

from openchatml.demo_models.chat_tokenizer import (
    save_tokenizer,
    template_markers,
    train_tokenizer,
    wrap_tokenizer,
)
from openchatml.demo_models.families import FAMILIES, ChatFamily

TEMPLATES = Path(__file__).parents[1] / "templates" / "data" / "templates"
ANNOTATED = Path(__file__).parent / "data"

MISTRAL = ChatFamily(
    config_class="MistralConfig",
    model_class="MistralForCausalLM",
    tokens=("<unk>", "<s>", "</s>", "<pad>"),
    eos_token="</s>",
    pad_token="<pad>",
    stop_tokens=("</s>",),
    bos_token="<s>",
)
HERMES = ChatFamily(
    config_class="LlamaConfig",
    model_class="LlamaForCausalLM",
    tokens=("<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>", "<|im_end|>"),
    eos_token="<|im_end|>",
    pad_token="<|end_of_text|>",
    stop_tokens=("<|im_end|>",),
    bos_token="<|begin_of_text|>",
)
FAMILY_OF = {
    "Qwen-Qwen2.5-7B-Instruct": FAMILIES["qwen3"],
    "meta-llama-Llama-3.1-8B-Instruct": FAMILIES["llama"],
    "mistralai-Mistral-Nemo-Instruct-2407": MISTRAL,
    "Qwen3.5-4B": FAMILIES["qwen3"],
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use": HERMES,
}
"""Each template with an annotated copy in ``data/``, and the family of its tokenizer."""


def tokenizer_folder(folder: Path, name: str) -> Path:
    """Write the tokenizer of template ``name`` (a key of :data:`FAMILY_OF`) into ``folder``."""
    text = (TEMPLATES / f"{name}.jinja").read_text()
    family = FAMILY_OF[name]
    markers = list(dict.fromkeys([*family.tokens, *template_markers(text)]))
    tokenizer = wrap_tokenizer(train_tokenizer(markers, [text]), text, family, 8192)
    folder.mkdir(parents=True, exist_ok=True)
    save_tokenizer(tokenizer, folder, text, family, 8192)
    return folder
