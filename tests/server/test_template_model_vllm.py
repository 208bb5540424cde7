"""A model with its own chat template served through a real upstream vLLM (CPU):
``openchatml serve --upstream URL --tokenizer FOLDER`` over the tiny Qwen3 with the real
Qwen3 template. vLLM samples the ids; this server renders the prompt and parses the
answer; the items are the ones vLLM's own completion ids parse to."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli_server import CliServer
from openapi import validate
from test_template_model import LOOKUP, TEMPLATE, no_markers

import vllm_harness

pytestmark = pytest.mark.vllm


@pytest.fixture(scope="module")
def qwen_folder() -> Path:
    from openchatml.demo_models.tiny_chat import ensure_tiny_chat_model

    return ensure_tiny_chat_model(None, TEMPLATE, family="qwen3")


@pytest.fixture(scope="module")
def qwen_vllm(
    qwen_folder: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[vllm_harness.VllmServer]:
    yield from vllm_harness.serving_for_tests(qwen_folder, tmp_path_factory)


@pytest.fixture(scope="module")
def server(
    qwen_vllm: Any, qwen_folder: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CliServer]:
    home = tmp_path_factory.mktemp("serve-qwen-vllm")
    running = CliServer(["--upstream", qwen_vllm.base_url, "--tokenizer", str(qwen_folder)], home)
    yield running
    running.stop()
    assert running.process.returncode == 0, running.log()


def test_answers_are_valid_items_without_markers(server: CliServer) -> None:
    assert "chat template: json tool calls, reasoning tags" in server.log()
    with server.http() as http:
        for seed in range(3):
            body = {"input": "Hello", "tools": [LOOKUP], "max_output_tokens": 60, "seed": seed}
            reply = http.post("/v1/responses", json=body)
            assert reply.status_code == 200, reply.text
            response = reply.json()
            validate(response, "ResponseResource")
            assert response["status"] in ("completed", "incomplete")
            for item in response["output"]:
                if item["type"] in ("message", "reasoning"):
                    no_markers(item["content"][0]["text"])


def test_greedy_answer_matches_vllm_completion(server: CliServer, qwen_vllm: Any, qwen_folder: Path) -> None:
    """Greedy decoding: our reasoning and answer are what vLLM's own completion of the
    same prompt (rendered by transformers) says between the markers."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(qwen_folder)
    with server.http() as http:
        ours = http.post(
            "/v1/responses", json={"input": "Hi", "temperature": 0, "max_output_tokens": 80}
        ).json()
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Hi"}], add_generation_prompt=True, tokenize=True, return_dict=False
    )
    raw = httpx.post(
        f"{qwen_vllm.base_url}/v1/completions",
        json={"prompt": list(prompt), "max_tokens": 80, "temperature": 0, "skip_special_tokens": False},
        timeout=120,
    ).json()["choices"][0]["text"]
    reasoning = raw.split("<think>", 1)[1].split("</think>", 1)[0].strip()
    answer = raw.split("</think>", 1)[1].split("<|im_end|>", 1)[0].strip()
    items = {item["type"]: item for item in ours["output"]}
    assert items["reasoning"]["content"][0]["text"] == reasoning
    assert items["message"]["content"][0]["text"] == answer
