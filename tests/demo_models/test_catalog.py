"""The demo models by name: tiny (trained), tiny-random and tiny-chat-<family> with the shipped templates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openchatml.demo_models.catalog import (
    demo_model_names,
    ensure_demo_model,
    family_template,
    is_demo_model,
)
from openchatml.demo_models.tiny_chat import FAMILIES
from openchatml.templates.environment import ChatTemplate

transformers = pytest.importorskip("transformers", reason="the demo models need transformers")


def test_names_cover_the_trained_the_random_and_every_family() -> None:
    names = demo_model_names()
    assert names[:2] == ("tiny", "tiny-random")
    assert {f"tiny-chat-{family}" for family in FAMILIES} <= set(names)
    assert all(is_demo_model(name) for name in names)
    for other in ("tiny-chat", "tiny-chat-", "tiny-chat-mistral", "Qwen/Qwen3-8B", "./tiny", "TINY"):
        assert not is_demo_model(other)


def test_every_family_ships_a_template_that_renders_a_tool_turn() -> None:
    for family in FAMILIES:
        text = family_template(family)
        template = ChatTemplate(text, name=f"{family}.jinja")
        tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
        call = {"type": "function", "function": {"name": "lookup", "arguments": {"query": "x"}}}
        messages = [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Look it up."},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "content": "found"},
        ]
        rendered = template.render(messages, tools=tools, add_generation_prompt=True)
        assert "Be brief." in rendered and "Look it up." in rendered and "found" in rendered
        assert '"query": "x"' in rendered or '"query":"x"' in rendered
    with pytest.raises(KeyError):
        family_template("mistral")


def test_unknown_names_are_refused(tmp_path: Path) -> None:
    for name in ("tiny-chat-mistral", "gpt-oss-20b", ""):
        with pytest.raises(KeyError):
            ensure_demo_model(name, tmp_path)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_tiny_chat_family_builds_around_its_template(
    family: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    home = tmp_path_factory.mktemp(f"home-{family}")
    folder = ensure_demo_model(f"tiny-chat-{family}", home)
    assert folder.parent == home / "models" and folder.name.startswith(f"tiny-chat-{family}-{family}-")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    template = config.get("chat_template") or (folder / "chat_template.jinja").read_text()
    assert template == family_template(family)
    assert ensure_demo_model(f"tiny-chat-{family}", home) == folder  # cached: the same folder


def test_tiny_is_the_trained_model_and_tiny_random_the_random_one(tmp_path: Path) -> None:
    from openchatml.demo_models.tiny_random import tiny_model_dir
    from openchatml.demo_models.tiny_trained import trained_model_dir

    assert ensure_demo_model("tiny", tmp_path) == trained_model_dir(tmp_path)
    assert ensure_demo_model("tiny-random", tmp_path) == tiny_model_dir(tmp_path)
    assert (tmp_path / "models" / "tiny-gpt-oss" / "config.json").is_file()
    assert ensure_demo_model("tiny", tmp_path) != ensure_demo_model("tiny-random", tmp_path)
