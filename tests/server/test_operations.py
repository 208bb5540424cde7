"""Running the server: cross-origin requests, request ids, the access log and its level,
and ``openchatml serve``'s start-up as a user meets it (a busy port, no network, a model
to download or already in the Hugging Face cache, "serving" said only once it serves)."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from live import LiveServer, ScriptedEngine, completion, free_port, make_service
from test_responses_api import ANSWER, sse_events

from openchatml.server.auth import KeyChecker
from openchatml.server.limits import Limits

ORIGIN = "https://app.example"
GENERATED_ID = re.compile(r"req_[0-9a-f]{32}")
MODEL = "scripted-model"
SERVE = [sys.executable, "-c", "from openchatml.cli import main; main()", "serve"]


@pytest.fixture
def cors_server(tmp_path: Path) -> Iterator[LiveServer]:
    """A live server letting ``ORIGIN`` call it, with API keys."""
    service = make_service(ScriptedEngine(completion(ANSWER)), tmp_path / "store.sqlite3")
    server = LiveServer(service, keys=KeyChecker(["key-1"]), cors_origins=[ORIGIN])
    with server:
        yield server


# --- CORS ---------------------------------------------------------------------------------------


def preflight(
    http: httpx.Client, origin: str, headers: str = "authorization, content-type"
) -> httpx.Response:
    return http.options(
        "/v1/responses",
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": headers,
        },
    )


def test_cors_preflight_and_answers_for_an_allowed_origin(cors_server: LiveServer) -> None:
    with cors_server.http() as http:
        asked = "authorization, content-type, openai-beta, x-stainless-lang, openchatml-wire"
        allowed = preflight(http, ORIGIN, asked)  # a preflight carries no key: it needs none
        assert allowed.status_code == 200, allowed.text
        assert allowed.headers["access-control-allow-origin"] == ORIGIN
        assert "POST" in allowed.headers["access-control-allow-methods"]
        assert allowed.headers["access-control-allow-headers"] == asked
        assert "access-control-allow-credentials" not in allowed.headers
        refused = preflight(http, "https://evil.example")
        assert refused.status_code == 400
        assert "access-control-allow-origin" not in refused.headers
        key = {"Authorization": "Bearer key-1", "Origin": ORIGIN}
        answer = http.post("/v1/responses", json={"model": MODEL, "input": "hi"}, headers=key)
        assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == ORIGIN
        exposed = {h.strip().lower() for h in answer.headers["access-control-expose-headers"].split(",")}
        assert {"x-request-id", "openchatml-ignored-parameters", "retry-after"} <= exposed
        unauthorized = http.post("/v1/responses", json={"input": "hi"}, headers={"Origin": ORIGIN})
        assert unauthorized.status_code == 401  # an error a page can read
        assert unauthorized.headers["access-control-allow-origin"] == ORIGIN
        other = http.get(
            "/v1/models", headers={"Authorization": "Bearer key-1", "Origin": "https://x.example"}
        )
        assert other.status_code == 200 and "access-control-allow-origin" not in other.headers


def test_no_origin_is_allowed_by_default_and_a_star_allows_any(tmp_path: Path) -> None:
    service = make_service(ScriptedEngine(completion(ANSWER)))
    with LiveServer(service) as server, server.http() as http:
        reply = preflight(http, ORIGIN)
        assert "access-control-allow-origin" not in reply.headers
        plain = http.get("/v1/models", headers={"Origin": ORIGIN})
        assert plain.status_code == 200 and "access-control-allow-origin" not in plain.headers
    anyone = LiveServer(make_service(ScriptedEngine(completion(ANSWER))), cors_origins=["*"])
    with anyone as server, server.http() as http:
        reply = preflight(http, "https://anywhere.example")
        assert reply.status_code == 200 and reply.headers["access-control-allow-origin"] == "*"


# --- request ids ---------------------------------------------------------------------------------


def test_every_answer_carries_a_request_id(cors_server: LiveServer) -> None:
    key = {"Authorization": "Bearer key-1"}
    with cors_server.http(headers=key) as http:
        echoed = http.get("/v1/models", headers={"x-request-id": "client-42:a/b"})
        assert echoed.headers["x-request-id"] == "client-42:a/b"
        answers = {
            "json": http.post("/v1/responses", json={"model": MODEL, "input": "hi"}),
            "sse": http.post("/v1/responses", json={"model": MODEL, "input": "hi", "stream": True}),
            "404 route": http.get("/v1/nothing-here"),
            "404 response": http.get("/v1/responses/resp_missing"),
            "400": http.post("/v1/responses", json={"model": MODEL, "input": 5}),
            "401": http.get("/v1/models", headers={"Authorization": "Bearer wrong"}),
            "414": http.get("/v1/models?" + "q" * 20000),
            "health": http.get("/health"),
            "preflight": preflight(http, ORIGIN),
            "insane id": http.get("/v1/models", headers={"x-request-id": "two words"}),
            "long id": http.get("/v1/models", headers={"x-request-id": "a" * 129}),
        }
    assert [a.status_code for a in answers.values()] == [
        200,
        200,
        404,
        404,
        400,
        401,
        414,
        200,
        200,
        200,
        200,
    ]
    ids = [a.headers["x-request-id"] for a in answers.values()]
    assert all(GENERATED_ID.fullmatch(i) for i in ids), ids
    assert len(set(ids)) == len(ids)
    assert sse_events(answers["sse"].text)[-1]["type"] == "response.completed"


def test_a_websocket_handshake_carries_the_request_id(cors_server: LiveServer) -> None:
    from websockets.sync.client import connect

    url = cors_server.url.replace("http", "ws") + "/v1/responses"
    headers = {"Authorization": "Bearer key-1", "x-request-id": "ws-1"}
    with connect(url, additional_headers=headers) as ws:
        assert ws.response is not None and ws.response.headers["x-request-id"] == "ws-1"


def test_the_access_log_has_a_line_per_answer_with_its_id(
    cors_server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="openchatml.access")
    key = {"Authorization": "Bearer key-1"}
    with cors_server.http(headers=key) as http:
        http.post("/v1/responses", json={"model": MODEL, "input": "hi"}, headers={"x-request-id": "log-1"})
        http.post("/v1/responses", json={"model": MODEL, "input": "hi", "stream": True})
        http.get("/v1/%0Anope", headers={"x-request-id": "log-3"})
        http.get("/health", headers={"x-request-id": "log-4"})
    deadline = time.monotonic() + 10  # a line is written once the app is done with it (after the body)
    while True:
        lines = {r.getMessage(): r.levelno for r in caplog.records if r.name == "openchatml.access"}
        if len(lines) == 4 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    [created] = [m for m in lines if "request_id=log-1" in m]
    assert re.fullmatch(
        r'127\.0\.0\.1:\d+ "POST /v1/responses" 200 \d+ B [\d.]+ ms request_id=log-1', created
    )
    [streamed] = [m for m in lines if "POST" in m and "log-1" not in m]
    assert " 200 " in streamed and GENERATED_ID.search(streamed)
    [missing] = [m for m in lines if "request_id=log-3" in m]
    assert '"GET /v1/%0Anope" 404' in missing and "\n" not in missing  # the path as sent
    [health] = [m for m, level in lines.items() if "request_id=log-4" in m]
    assert lines[health] == logging.DEBUG and lines[created] == logging.INFO


# --- openchatml serve ------------------------------------------------------------------------------


def serve_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a ``serve`` process: ``home`` its data and Hugging Face cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    return {**env, "OPENCHATML_HOME": str(home), "HF_HOME": str(home / "hf"), **extra}


def run_serve(args: list[str], env: dict[str, str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """``openchatml serve ARGS`` to its end: it must end within ``timeout`` seconds."""
    return subprocess.run([*SERVE, *args], env=env, capture_output=True, text=True, timeout=timeout)


def test_a_busy_port_is_one_line_before_any_model_loads(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ended = run_serve(["--model", "tiny-random", "--port", str(port)], serve_env(tmp_path))
    assert ended.returncode == 1, ended
    assert ended.stderr == f"error: cannot listen on 127.0.0.1:{port}: the address is already in use " + (
        "(is another server running on this port?)\n"
    )
    assert not (tmp_path / "models").exists()  # refused before the demo model was built


def test_no_network_is_said_at_once_without_retries(tmp_path: Path) -> None:
    closed = free_port()  # nothing listens there: the hub is unreachable
    env = serve_env(tmp_path, HF_ENDPOINT=f"http://127.0.0.1:{closed}")
    ended = run_serve(["--port", str(free_port()), "--store", "none"], env, timeout=20)
    assert ended.returncode == 2, ended
    assert "no --model given: serving openai/gpt-oss-20b" in ended.stderr
    assert f"error: cannot reach the Hugging Face Hub at http://127.0.0.1:{closed}" in ended.stderr
    assert "Pass --model tiny for an offline demo model" in ended.stderr
    assert "Retrying" not in ended.stderr and "Traceback" not in ended.stderr
    offline = run_serve(["--port", str(free_port())], serve_env(tmp_path, HF_HUB_OFFLINE="1"), timeout=20)
    assert offline.returncode == 2, offline
    assert "is not in the Hugging Face cache" in offline.stderr and "HF_HUB_OFFLINE is set" in offline.stderr
    assert "Traceback" not in offline.stderr


class FakeHub(BaseHTTPRequestHandler):
    """The Hugging Face Hub's model API, for ``openai/gpt-oss-20b`` only: its files (an
    ``original/`` copy transformers does not download) and a quantised config; every
    file download is a 404."""

    sizes: ClassVar[dict[str, int]] = {}

    def do_GET(self) -> None:
        if self.path.startswith("/api/models/openai/gpt-oss-20b"):
            siblings = [{"rfilename": name, "size": size} for name, size in self.sizes.items()]
            config = {"model_type": "gpt_oss", "quantization_config": {"quant_method": "mxfp4"}}
            body = json.dumps(
                {"id": "openai/gpt-oss-20b", "sha": "a" * 40, "siblings": siblings, "config": config}
            ).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
        else:
            body = b""
            self.send_response(404)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(body)

    do_HEAD = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def fake_hub() -> Iterator[str]:
    """The URL of a :class:`FakeHub`."""
    hub = ThreadingHTTPServer(("127.0.0.1", 0), FakeHub)
    thread = threading.Thread(target=hub.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{hub.server_address[1]}"
    hub.shutdown()
    thread.join()


def test_a_model_to_download_is_said_with_its_size_and_memory_first(tmp_path: Path, fake_hub: str) -> None:
    FakeHub.sizes = {
        "config.json": 2_000,
        "model-00000-of-00001.safetensors": 6_000_000_000,
        "model-00001-of-00001.safetensors": 7_800_000_000,
        "original/model.safetensors": 13_000_000_000,
        "metal/model.bin": 13_000_000_000,
    }
    ended = run_serve(["--port", str(free_port())], serve_env(tmp_path, HF_ENDPOINT=fake_hub), timeout=60)
    assert ended.returncode == 2, ended  # the fake hub has no files to give
    lines = ended.stderr.splitlines()
    said = next(n for n, line in enumerate(lines) if "is not in the Hugging Face cache" in line)
    assert f"downloading 13.8 GB into {tmp_path / 'hf' / 'hub'}" in lines[said]
    assert "its weights take about 13.8 GB of memory" in lines[said + 1]
    assert "quantised (mxfp4)" in lines[said + 1]
    assert any(line.startswith("error: ") for line in lines[said + 2 :])
    FakeHub.sizes = {"config.json": 2_000, "model.safetensors": 10**17}
    full = run_serve(["--port", str(free_port())], serve_env(tmp_path, HF_ENDPOINT=fake_hub), timeout=60)
    assert full.returncode == 2, full
    assert "needs 100000000.0 GB of disk" in full.stderr and "downloading" not in full.stderr


def tiny_in_hub_cache(tmp_path: Path, repo: str) -> None:
    """The tiny random gpt-oss as ``repo`` in the Hugging Face cache under ``tmp_path/hf``."""
    from openchatml.demo_models.tiny_random import ensure_tiny_model

    folder = ensure_tiny_model(tmp_path / "build")
    cache = tmp_path / "hf" / "hub" / f"models--{repo.replace('/', '--')}"
    commit = "b" * 40
    shutil.copytree(folder, cache / "snapshots" / commit)
    (cache / "refs").mkdir()
    (cache / "refs" / "main").write_text(commit)


def start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen([*SERVE, *args], env=env, stdout=out, stderr=subprocess.STDOUT)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_a_cached_model_serves_offline_and_says_it_serves_once_it_does(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="the tiny model needs torch")
    tiny_in_hub_cache(tmp_path, "acme/tiny-gpt-oss")
    port = free_port()
    log = tmp_path / "serve.log"
    env = serve_env(tmp_path, HF_HUB_OFFLINE="1")
    args = ["--model", "acme/tiny-gpt-oss", "--device", "cpu", "--store", "none", "--port", str(port)]
    process = start([*args, "--log-level", "warning"], env, log)
    try:
        deadline = time.monotonic() + 120
        while "openchatml serving" not in log.read_text(errors="replace"):
            assert process.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.01)
        health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=10)  # said: so it answers
        assert health.status_code == 200
        models = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=10).json()
        assert [m["id"] for m in models["data"]] == ["acme/tiny-gpt-oss"]
    finally:
        stop(process)
    text = log.read_text(errors="replace")
    assert f"on http://127.0.0.1:{port}/v1/responses" in text
    assert "not in the Hugging Face cache" not in text
    assert "openchatml.access" not in text  # --log-level warning: no access log


def test_the_cli_serves_with_cors_an_access_log_and_request_ids(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="the demo model needs torch")
    from cli_server import CliServer

    args = ["--model", "tiny-random", "--device", "cpu", "--store", "none", "--cors-origin", ORIGIN]
    server = CliServer([*args, "--log-level", "info"], tmp_path)
    try:
        with server.http() as http:
            allowed = preflight(http, ORIGIN)
            body = {
                "model": "tiny-random",
                "input": "hi",
                "max_output_tokens": 2,
                "client_metadata": {"a": 1},
            }
            answer = http.post(
                "/v1/responses", json=body, headers={"x-request-id": "cli-1", "Origin": ORIGIN}
            )
    finally:
        server.stop()
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == ORIGIN
    assert answer.status_code == 200 and answer.headers["x-request-id"] == "cli-1"
    assert answer.headers["openchatml-ignored-parameters"] == "client_metadata"
    log = server.log()
    assert re.search(
        r'INFO openchatml\.access: \S+ "POST /v1/responses" 200 \d+ B [\d.]+ ms request_id=cli-1', log
    )
    assert "ignoring request parameter 'client_metadata'" in log
    assert '"GET /health"' not in log  # the start-up's health checks: at debug only
    assert server.process.returncode == 0, log


def test_a_body_too_large_is_refused_with_a_request_id(tmp_path: Path) -> None:
    service = make_service(ScriptedEngine(completion(ANSWER)))
    with LiveServer(service, limits=Limits(max_body_bytes=1024)) as server, server.http() as http:
        big = http.post("/v1/responses", json={"model": MODEL, "input": "x" * 4096})
    assert big.status_code == 413 and GENERATED_ID.fullmatch(big.headers["x-request-id"])
