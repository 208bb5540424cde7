"""Tiny random-weight chat models carrying real chat templates (Qwen3, Llama 3.1), held to transformers."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openchatml.demo_models import tiny_chat
from openchatml.demo_models.tiny_chat import (
    CALL_ARGUMENTS,
    CALL_NAME,
    FAMILIES,
    build_tiny_chat_model,
    ensure_tiny_chat_model,
    template_markers,
    tiny_chat_model_dir,
)
from openchatml.engines import EngineError, SamplingParams
from openchatml.engines.transformers import TransformersEngine

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def _templates() -> Path:
    env = os.environ.get("OPENCHATML_TEMPLATES")
    return Path(env) if env else Path(__file__).parents[1] / "templates" / "data" / "templates"


TEMPLATES = _templates()
QWEN3 = TEMPLATES / "Qwen-Qwen3-0.6B.jinja"
LLAMA = TEMPLATES / "meta-llama-Llama-3.1-8B-Instruct.jinja"
pytestmark = pytest.mark.skipif(
    not (QWEN3.is_file() and LLAMA.is_file()), reason=f"no Qwen3 / Llama 3.1 templates in {TEMPLATES}"
)

QWEN3_MARKERS = ["<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>"]
LLAMA_MARKERS = [
    "<|begin_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<|python_tag|>",
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "name": "get_weather", "content": "Sunny, 21°C"},
]
TEXTS = [
    "hello world",
    "Hello, World! It's 3.14159 o'clock; they'll've WE'RE",
    "  leading spaces\n\n\ttabs\t\t and   runs of     spaces   \r\n\r\n",
    "\n\n\n",
    " ",
    "héllo naïve café, Ünïcödé ß ﬁ 日本語のテキスト 中文 한국어 Ελληνικά русский",
    "emoji 😀👍🏽👨‍👩‍👧‍👦 🇫🇷 and e\u0301 combining",
    'code: def f(x):\n    return {"a": [x**2, None]}  # ok\n',
    "not markers: <|im_star t|> <| im_end |> <thinking> </tool_call x> [INST",
]


@pytest.fixture(scope="session")
def chat_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("openchatml-chat-home")


@pytest.fixture(scope="session")
def qwen3_dir(chat_home: Path) -> Path:
    return ensure_tiny_chat_model(chat_home, QWEN3)


@pytest.fixture(scope="session")
def llama_dir(chat_home: Path) -> Path:
    return ensure_tiny_chat_model(chat_home, LLAMA, family="llama")


@pytest.fixture(scope="session", params=["qwen3", "llama"])
def family(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="session")
def folder(family: str, qwen3_dir: Path, llama_dir: Path) -> Path:
    return qwen3_dir if family == "qwen3" else llama_dir


@pytest.fixture(scope="session")
def tokenizer(folder: Path) -> Any:
    return transformers.AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="session")
def model(folder: Path) -> Any:
    return transformers.AutoModelForCausalLM.from_pretrained(folder).eval()


@pytest.fixture(scope="session")
def engine(folder: Path, family: str) -> Iterator[TransformersEngine]:
    loaded = TransformersEngine.load(folder, model_id=f"tiny-{family}", device="cpu")
    yield loaded
    asyncio.run(loaded.aclose())


def prompt_ids(tokenizer: Any, messages: list[dict[str, Any]] | None = None) -> list[int]:
    messages = messages or [{"role": "user", "content": "Hello there, who are you?"}]
    ids = tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=True, return_dict=False
    )
    return [int(i) for i in ids]


def generate(engine: TransformersEngine, prompt: list[int], params: SamplingParams) -> list[int]:
    async def main() -> list[int]:
        return [t async for chunk in engine.generate(prompt, params) for t in chunk]

    return asyncio.run(main())


def stops(folder: Path) -> tuple[int, ...]:
    eos = json.loads((folder / "generation_config.json").read_text())["eos_token_id"]
    return tuple(eos if isinstance(eos, list) else [eos])


def sample(model: Any, tokenizer: Any, count: int, *, seed: int = 0, max_new: int = 200) -> list[str]:
    """``count`` sampled continuations (temperature 1) of the default prompt, decoded up to their end."""
    ids = torch.tensor([prompt_ids(tokenizer)] * count)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            do_sample=True,
            temperature=1.0,
            top_k=0,
            top_p=1.0,
            max_new_tokens=max_new,
            pad_token_id=tokenizer.pad_token_id,
        )
    texts = []
    for row in out[:, ids.shape[1] :].tolist():
        row = [t for t in row if t != tokenizer.pad_token_id]
        texts.append(tokenizer.decode(row, skip_special_tokens=False))
    return texts


# --- the template's markers -------------------------------------------------------------------------


def test_template_markers_finds_control_markers_not_placeholders() -> None:
    markers = template_markers(QWEN3.read_text())
    assert set(QWEN3_MARKERS) <= set(markers)
    assert "<tool_response>" in markers and "</tool_response>" in markers
    assert "<function-name>" not in markers and "<args-json-object>" not in markers
    assert markers.index("<|im_start|>") < markers.index("<|im_end|>")
    assert set(LLAMA_MARKERS) - {"<|begin_of_text|>"} <= set(template_markers(LLAMA.read_text()))
    assert template_markers("{{ '[INST]' + x + '[/INST]' }}<｜Assistant｜>{{ messages[0] }}") == [
        "[INST]",
        "[/INST]",
        "<｜Assistant｜>",
    ]


# --- what loads ---------------------------------------------------------------------------------------


def test_loads_as_a_checkpoint_of_its_family(family: str, folder: Path, tokenizer: Any, model: Any) -> None:
    spec = FAMILIES[family]
    expected = {"qwen3": "Qwen3ForCausalLM", "llama": "LlamaForCausalLM"}[family]
    assert type(model).__name__ == expected
    assert len(tokenizer) == model.config.vocab_size == model.get_input_embeddings().num_embeddings
    assert 2000 <= len(tokenizer) <= 4096 + 64
    assert (model.config.hidden_size, model.config.num_hidden_layers) == (64, 2)
    assert (model.config.num_attention_heads, model.config.num_key_value_heads) == (4, 2)
    assert model.config.intermediate_size == 128
    assert tokenizer.eos_token == spec.eos_token
    assert tokenizer.bos_token == spec.bos_token
    assert tokenizer.pad_token == spec.pad_token
    assert stops(folder) == tuple(tokenizer.convert_tokens_to_ids(list(spec.stop_tokens)))
    assert tokenizer.chat_template == (QWEN3 if family == "qwen3" else LLAMA).read_text()
    config = json.loads((folder / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"  # readable by transformers 4 and vLLM


def test_bos_is_added_as_the_family_does(family: str, tokenizer: Any) -> None:
    ids = tokenizer("hi there").input_ids
    if family == "llama":
        assert ids[0] == tokenizer.convert_tokens_to_ids("<|begin_of_text|>")
    else:
        assert tokenizer.decode(ids) == "hi there"
    rendered = prompt_ids(tokenizer)
    assert rendered.count(tokenizer.convert_tokens_to_ids("<|begin_of_text|>")) == (family == "llama")


def test_chat_template_renders_a_conversation_with_tools(family: str, tokenizer: Any) -> None:
    text = tokenizer.apply_chat_template(
        CONVERSATION, tools=TOOLS, add_generation_prompt=True, tokenize=False
    )
    assert '"get_weather"' in text and "Paris" in text and "Sunny, 21°C" in text
    if family == "qwen3":
        assert text.startswith("<|im_start|>system\nYou are terse.\n\n# Tools")
        assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' in text
        assert text.endswith("<|im_start|>assistant\n")
    else:
        assert text.startswith("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n")
        assert '{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>' in text
        assert text.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
    ids = tokenizer(text, add_special_tokens=False).input_ids
    assert tokenizer.decode(ids) == text
    for marker in QWEN3_MARKERS[:2] if family == "qwen3" else LLAMA_MARKERS[:4]:
        assert ids.count(tokenizer.convert_tokens_to_ids(marker)) == text.count(marker), marker


def test_markers_are_single_ids(family: str, tokenizer: Any) -> None:
    markers = [*FAMILIES[family].tokens, *(QWEN3_MARKERS if family == "qwen3" else LLAMA_MARKERS)]
    for marker in markers:
        ids = tokenizer("x" + marker + "y", add_special_tokens=False).input_ids
        (single,) = tokenizer(marker, add_special_tokens=False).input_ids
        assert single in ids and single >= tokenizer.vocab_size  # an added token
        assert tokenizer.decode([single]) == marker
        assert tokenizer.convert_ids_to_tokens(single) == marker


def test_control_markers_are_special_and_tags_are_not(family: str, tokenizer: Any) -> None:
    flags = {token.content: token.special for token in tokenizer.added_tokens_decoder.values()}
    assert flags[FAMILIES[family].eos_token]
    if family == "qwen3":
        assert flags["<|im_start|>"] and flags["<|endoftext|>"]
        assert not flags["<think>"] and not flags["<tool_call>"]  # as in Qwen's tokenizers
        ids = tokenizer("<think>hi</think><|im_end|>", add_special_tokens=False).input_ids
        assert tokenizer.decode(ids, skip_special_tokens=True) == "<think>hi</think>"
    else:
        assert all(flags[marker] for marker in LLAMA_MARKERS)


@pytest.mark.parametrize("text", TEXTS)
def test_text_round_trips(tokenizer: Any, text: str) -> None:
    ids = tokenizer(text, add_special_tokens=False).input_ids
    assert tokenizer.decode(ids) == text
    assert len(ids) <= len(text.encode())


def test_any_text_round_trips(qwen3_dir: Path) -> None:
    tok = transformers.AutoTokenizer.from_pretrained(qwen3_dir)

    @given(st.text())
    def check(text: str) -> None:
        assert tok.decode(tok(text, add_special_tokens=False).input_ids) == text

    check()


# --- what it generates --------------------------------------------------------------------------------


def test_transformers_engine_generates(family: str, engine: TransformersEngine, tokenizer: Any) -> None:
    assert engine.info.id == f"tiny-{family}"
    assert engine.info.context_length == tiny_chat.CONTEXT_LENGTH
    prompt = prompt_ids(tokenizer, CONVERSATION)
    ids = generate(engine, prompt, SamplingParams(max_tokens=5, temperature=0))
    assert len(ids) == 5 and all(0 <= t < len(tokenizer) for t in ids)
    sampled = generate(engine, prompt, SamplingParams(max_tokens=5, temperature=1.0, seed=3))
    assert sampled == generate(engine, prompt, SamplingParams(max_tokens=5, temperature=1.0, seed=3))


def test_greedy_writes_a_whole_turn(
    family: str, engine: TransformersEngine, tokenizer: Any, folder: Path
) -> None:
    params = SamplingParams(max_tokens=200, temperature=0, stop_token_ids=stops(folder))
    ids = generate(engine, prompt_ids(tokenizer), params)
    text = tokenizer.decode(ids)
    end = re.escape(FAMILIES[family].eos_token)
    if family == "qwen3":
        match = re.fullmatch(rf"<think>([^<>]+)</think>\n\n([^<>]+){end}", text)
        assert match is not None, text
        assert match.group(1).strip() and match.group(2).strip()
    else:
        assert re.fullmatch(rf"[^<>{{}}]+{end}", text) is not None, text


def test_sampling_writes_the_templates_shape(family: str, model: Any, tokenizer: Any) -> None:
    texts = sample(model, tokenizer, 64)
    end = re.escape(FAMILIES[family].eos_token)
    if family == "qwen3":
        call = '<tool_call>\n{"name": "lookup", "arguments": {"query": "tiny"}}\n</tool_call>'
        shape = re.compile(rf"<think>([^<>]*)</think>\n\n([^<>]*)({re.escape(call)})?{end}")
    else:
        call = '{"name": "lookup", "parameters": {"query": "tiny"}}'
        shape = re.compile(rf"([^<>{{}}]*|{re.escape(call)}){end}")
    matches = [shape.fullmatch(text) for text in texts]
    assert all(matches), [t for t, m in zip(texts, matches, strict=True) if not m]
    calls = [text for text in texts if call in text]
    assert 1 <= len(calls) <= len(texts) // 2
    body = calls[0][calls[0].index("{") : calls[0].rindex("}") + 1]
    arguments = "arguments" if family == "qwen3" else "parameters"
    assert json.loads(body) == {"name": CALL_NAME, arguments: dict(CALL_ARGUMENTS)}
    lengths = [len(tokenizer(t, add_special_tokens=False).input_ids) for t in texts]
    assert 3 <= sum(lengths) / len(lengths) <= 80


def test_shape_is_described_in_the_stamp(qwen3_dir: Path, llama_dir: Path) -> None:
    qwen3 = json.loads((qwen3_dir / "openchatml-tiny-chat.json").read_text())["shape"]
    assert qwen3["reasoning"] == ["<think>", "</think>"]
    assert (qwen3["start"], qwen3["bridge"], qwen3["end"]) == (
        "assistant\u010a",
        "\u010a\u010a",
        "<|im_end|>",
    )
    assert qwen3["call"] == '<tool_call>\n{"name": "lookup", "arguments": {"query": "tiny"}}\n</tool_call>'
    llama = json.loads((llama_dir / "openchatml-tiny-chat.json").read_text())["shape"]
    assert "reasoning" not in llama and llama["end"] == "<|eot_id|>"
    assert llama["call"] == '{"name": "lookup", "parameters": {"query": "tiny"}}'


# --- building and caching -----------------------------------------------------------------------------


def test_cache_returns_the_same_folder_without_rebuilding(
    chat_home: Path, qwen3_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("rebuilt a cached model")

    monkeypatch.setattr(tiny_chat, "build_tiny_chat_model", refuse)
    before = (qwen3_dir / "model.safetensors").stat().st_mtime_ns
    assert ensure_tiny_chat_model(chat_home, QWEN3) == qwen3_dir
    assert ensure_tiny_chat_model(chat_home, str(QWEN3)) == qwen3_dir
    assert ensure_tiny_chat_model(chat_home, QWEN3.read_text(), name=QWEN3.stem) == qwen3_dir
    assert (qwen3_dir / "model.safetensors").stat().st_mtime_ns == before
    assert qwen3_dir.parent == chat_home / "models"
    assert qwen3_dir.name.startswith("tiny-chat-qwen3-Qwen-Qwen3-0.6B-")
    assert not [p for p in qwen3_dir.parent.iterdir() if p.name.startswith(".")]  # no work folders left
    for other in (
        tiny_chat_model_dir(chat_home, QWEN3, seed=1),
        tiny_chat_model_dir(chat_home, QWEN3, family="llama"),
        tiny_chat_model_dir(chat_home, QWEN3, special_tokens=["<|x|>"]),
        tiny_chat_model_dir(chat_home, QWEN3.read_text() + "\n"),
    ):
        assert other != qwen3_dir and not other.exists()


def test_home_defaults_to_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENCHATML_HOME", str(tmp_path))
    assert tiny_chat_model_dir(None, QWEN3).parent == tmp_path / "models"


def test_an_incomplete_folder_is_replaced(tmp_path: Path) -> None:
    target = tiny_chat_model_dir(tmp_path, LLAMA, family="llama")
    target.mkdir(parents=True)
    (target / "config.json").write_text("{}")
    assert ensure_tiny_chat_model(tmp_path, LLAMA, family="llama") == target
    assert json.loads((target / "config.json").read_text())["model_type"] == "llama"


def test_build_is_deterministic(tmp_path: Path, llama_dir: Path) -> None:
    (tmp_path / "a").mkdir()
    build_tiny_chat_model(tmp_path / "a", LLAMA.read_text(), family="llama")

    def digest(folder: Path) -> dict[str, str]:
        skip = {"openchatml-tiny-chat.json"}  # the cached copy's stamp also holds its key
        return {
            p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir() if p.name not in skip
        }

    assert digest(tmp_path / "a") == digest(llama_dir)


def test_special_tokens_are_added(tmp_path: Path) -> None:
    template = (
        "{% for m in messages %}<start_of_turn>{{ m.role }}\n{{ m.content }}<end_of_turn>\n{% endfor %}"
    )
    template += "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
    folder = ensure_tiny_chat_model(tmp_path, template, special_tokens=["<|extra|>"], name="gemma-like")
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    for marker in ("<|extra|>", "<start_of_turn>", "<end_of_turn>"):
        assert len(tok(marker, add_special_tokens=False).input_ids) == 1
    shape = json.loads((folder / "openchatml-tiny-chat.json").read_text())["shape"]
    assert shape["end"] == "<end_of_turn>"  # read from the template, not the family
    assert tok.convert_tokens_to_ids("<end_of_turn>") in stops(folder)


def test_errors(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="unknown model family 'gpt2'"):
        ensure_tiny_chat_model(tmp_path, QWEN3, family="gpt2")
    with pytest.raises(EngineError, match=r"cannot render a user message.*'functions' is undefined"):
        build_tiny_chat_model(tmp_path, "{{ functions.x }}")
    with pytest.raises(FileNotFoundError):
        ensure_tiny_chat_model(tmp_path, tmp_path / "missing.jinja")
    assert not (tmp_path / "models").exists()
