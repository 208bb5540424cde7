"""``openchatml serve --model NAME`` for every demo model, as a user starts it: the model is
built offline on first use, listed under its name, and answers through the official SDK."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_server import CliServer

pytest.importorskip("torch", reason="the demo models need torch (pip install 'openchatml[transformers]')")


@pytest.mark.parametrize(
    ("name", "kinds", "status"),
    [
        # greedy, the random gpt-oss repeats a loop of final messages and never returns
        ("tiny-random", {"message"}, "incomplete"),
        # the tiny chat models end their turn greedily, after reasoning where the template has it
        ("tiny-chat-qwen3", {"reasoning", "message"}, "completed"),
        ("tiny-chat-llama", {"message"}, "completed"),
    ],
)
def test_demo_model_serves_by_name(name: str, kinds: set[str], status: str, tmp_path: Path) -> None:
    server = CliServer(["--model", name, "--device", "cpu", "--store", "none"], tmp_path)
    try:
        client = server.client()
        assert [model.id for model in client.models.list()] == [name]
        response = client.responses.create(
            model=name, input="Say hello.", temperature=0, max_output_tokens=96, store=False
        )
        assert response.status == status, response
        if status == "incomplete":
            assert response.incomplete_details is not None
            assert response.incomplete_details.reason == "max_output_tokens"
        assert response.model == name
        assert {item.type for item in response.output} == kinds
        assert response.output_text.strip()
    finally:
        server.stop()
    assert server.process.returncode == 0, server.log()


def test_an_unknown_tiny_chat_family_is_not_a_demo_model(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="tiny-chat-mistral"):
        CliServer(
            ["--model", "tiny-chat-mistral", "--device", "cpu", "--store", "none"], tmp_path, timeout=60
        )
