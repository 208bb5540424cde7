"""The playground's routes and the envelope: ``GET /`` and its files (no CDN, a strict
Content-Security-Policy, only the files shipped), ``serve --no-playground``; and
``GET /v1/responses/{id}/envelope``: per sampling step the prompt ids the engine was
given and the ids it sampled (an agent loop's steps, a function call's next response),
decoded text pieces and control-token positions, the owner's alone, absent where the
server records none, bounded in responses kept and ids per response."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from live import KEY, LiveServer, ScriptedEngine, completion

from openchatml import Message
from openchatml.core.encoding import load_encoding
from openchatml.engines.base import SamplingParams
from openchatml.responses.crypto import Sealer
from openchatml.server.auth import KeyChecker
from openchatml.server.config import ServerConfig
from openchatml.server.envelopes import EnvelopeLog, RecordingEngine, record_response
from openchatml.server.routes.playground import CONTENT_SECURITY_POLICY, FOLDER
from openchatml.server.service import ResponseService
from openchatml.server.settings import BrowserSettings, ServiceSettings

THINK = Message.assistant("The user greets me.", channel="analysis")
ANSWER = Message.assistant("Hello there!", channel="final")
CALL = Message.tool_call("functions.get_weather", '{"city": "Paris"}')
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
ENCODING = load_encoding()


def service(
    engine: Any,
    envelopes: EnvelopeLog | None,
    settings: ServiceSettings | None = None,
) -> ResponseService:
    return ResponseService(engine, None, sealer=Sealer(KEY), settings=settings, envelopes=envelopes)


@pytest.fixture
def live() -> Iterator[Any]:
    """``live(engine, envelopes=None, keys=(), playground=True, settings=None)``: a started
    server (``envelopes`` ``None``: a fresh :class:`EnvelopeLog`)."""
    servers: list[LiveServer] = []

    def start(
        engine: Any,
        envelopes: EnvelopeLog | None = None,
        *,
        keys: tuple[str, ...] = (),
        playground: bool = True,
        settings: ServiceSettings | None = None,
    ) -> LiveServer:
        log = EnvelopeLog() if envelopes is None else envelopes
        server = LiveServer(service(engine, log, settings), keys=KeyChecker(keys), playground=playground)
        servers.append(server.__enter__())
        return server

    yield start
    for server in servers:
        server.__exit__()


def create(http: httpx.Client, **body: Any) -> dict[str, Any]:
    answer = http.post("/v1/responses", json={"model": "scripted-model", "store": False, **body})
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def joined(run: dict[str, Any]) -> str:
    return "".join(run["pieces"])


# --- the page --------------------------------------------------------------------------


def test_page_and_files_are_served_with_a_strict_policy(live: Any) -> None:
    http = live(ScriptedEngine(completion(ANSWER))).http()
    page = http.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "default-src 'self'" in CONTENT_SECURITY_POLICY and "script-src 'self'" in CONTENT_SECURITY_POLICY
    assert "unsafe-inline" not in CONTENT_SECURITY_POLICY and "unsafe-eval" not in CONTENT_SECURITY_POLICY
    assert page.headers["x-content-type-options"] == "nosniff"
    referenced = re.findall(r'(?:src|href)="(/playground/[^"]+)"', page.text)
    assert "/playground/main.js" in referenced and "/playground/playground.css" in referenced
    for path in referenced:
        answer = http.get(path)
        assert answer.status_code == 200, path
        assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    script = http.get("/playground/main.js")
    assert script.headers["content-type"].startswith("text/javascript")
    assert http.get("/playground/playground.css").headers["content-type"].startswith("text/css")


def test_every_module_import_and_no_outside_host() -> None:
    """Each JS module imports only the folder's own modules, and no file names another host."""
    names = {resource.name for resource in FOLDER.iterdir()}
    for resource in FOLDER.iterdir():
        text = resource.read_text()
        if resource.name.endswith(".js"):
            for imported in re.findall(r'from "\./([^"]+)"', text):
                assert imported in names, (resource.name, imported)
        assert not re.search(r"(?:src|href)=\"(?:https?:)?//", text), resource.name
        assert "innerHTML" not in text and "insertAdjacentHTML" not in text, resource.name


def test_only_shipped_files(live: Any) -> None:
    http = live(ScriptedEngine(completion(ANSWER))).http()
    for path in ("/playground/nope.js", "/playground/..%2Fapp.py", "/playground/.hidden.js", "/playground/x"):
        answer = http.get(path)
        assert answer.status_code == 404, path
        assert set(answer.json()["error"]) >= {"message", "type", "code"}


def test_no_playground(live: Any) -> None:
    http = live(ScriptedEngine(completion(ANSWER)), playground=False).http()
    assert http.get("/").status_code == 404
    assert http.get("/playground/main.js").status_code == 404
    assert http.get("/health").status_code == 200


def test_package_data_names_the_files() -> None:
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    line = next(line for line in pyproject.splitlines() if line.startswith('"openchatml.server" ='))
    for suffix in ("html", "js", "css"):
        assert f"playground/*.{suffix}" in line
    assert {resource.name.rsplit(".", 1)[-1] for resource in FOLDER.iterdir()} <= {"html", "js", "css"}


# --- the envelope ----------------------------------------------------------------------


def test_envelope_of_one_step(live: Any) -> None:
    script = completion(THINK, ANSWER)
    engine = ScriptedEngine(script)
    http = live(engine).http()
    response = create(http, input="Hi <|start|> there")
    envelope = http.get(f"/v1/responses/{response['id']}/envelope").json()
    assert envelope["object"] == "openchatml.envelope" and envelope["id"] == response["id"]
    assert envelope["format"] == "harmony" and envelope["truncated"] is False
    [step] = envelope["steps"]
    assert step["prompt"]["ids"] == engine.prompts[0]
    assert step["completion"]["ids"] == script
    assert joined(step["prompt"]) == ENCODING.decode(engine.prompts[0])
    assert joined(step["completion"]) == ENCODING.decode(script)
    prompt = step["prompt"]
    specials = [prompt["pieces"][i] for i in prompt["special"]]
    assert specials[0] == "<|start|>" and "<|message|>" in specials and "<|end|>" in specials
    assert all(ENCODING.is_special_token(prompt["ids"][i]) for i in prompt["special"])
    # the user's "<|start|>" is text: ordinary ids, never a control token
    user_text = "Hi <|start|> there"
    assert user_text in joined(prompt)
    assert len([p for p in specials if p == "<|start|>"]) == joined(prompt).count("<|start|>") - 1
    completion_specials = [step["completion"]["pieces"][i] for i in step["completion"]["special"]]
    assert completion_specials[-1] == "<|return|>" and "<|channel|>" in completion_specials
    assert http.get(f"/responses/{response['id']}/envelope").status_code == 200  # also without /v1


def test_envelope_of_a_function_call_and_its_output(live: Any) -> None:
    turns = iter([completion(THINK, CALL), completion(ANSWER)])
    engine = ScriptedEngine(lambda prompt: next(turns))
    http = live(engine).http()
    question = {"type": "message", "role": "user", "content": "Weather in Paris?"}
    first = create(http, input=[question], tools=[WEATHER])
    call = first["output"][-1]
    assert call["type"] == "function_call"
    [step] = http.get(f"/v1/responses/{first['id']}/envelope").json()["steps"]
    assert joined(step["completion"]).endswith('<|constrain|>json<|message|>{"city": "Paris"}<|call|>')
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": '{"temp": 21}'}
    second = create(http, input=[question, *first["output"], output], tools=[WEATHER])
    [later] = http.get(f"/v1/responses/{second['id']}/envelope").json()["steps"]
    assert later["prompt"]["ids"] == engine.prompts[1]
    text = joined(later["prompt"])
    assert "type get_weather" in text
    assert (
        '<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{"temp": 21}<|end|>'
        in text
    )
    assert joined(later["completion"]) == ENCODING.decode(completion(ANSWER))


def browser_call(query: str) -> Message:
    return Message.tool_call(
        "browser.search", json.dumps({"query": query}), channel="analysis", constrained=False
    )


def test_envelope_of_an_agent_loop_has_a_step_per_sampling(live: Any, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "lighthouse.md").write_text("# The lighthouse keeper\nHe climbs 212 steps every evening.\n")
    browser = BrowserSettings(corpus=str(corpus), index=str(tmp_path / "index.sqlite3"), corpus_name="docs")
    steps = iter([completion(browser_call("lighthouse keeper")), completion(ANSWER)])
    engine = ScriptedEngine(lambda prompt: next(steps))
    http = live(engine, settings=ServiceSettings(browser=browser)).http()
    response = create(http, input="Who climbs steps?", tools=[{"type": "web_search_preview"}])
    assert [item["type"] for item in response["output"]][-1] == "message"
    envelope = http.get(f"/v1/responses/{response['id']}/envelope").json()
    first, second = envelope["steps"]
    assert [first["index"], second["index"]] == [0, 1]
    assert first["prompt"]["ids"] == engine.prompts[0] and second["prompt"]["ids"] == engine.prompts[1]
    assert first["completion"]["ids"] == completion(browser_call("lighthouse keeper"))
    assert second["completion"]["ids"] == completion(ANSWER)
    # the second prompt is the first, what the model sampled, and the tool's reply
    assert second["prompt"]["ids"][: len(first["prompt"]["ids"])] == first["prompt"]["ids"]
    reply = joined(second["prompt"])[len(joined(first["prompt"])) + len(joined(first["completion"])) :]
    assert reply.startswith("<|start|>browser.search to=assistant") and "212 steps" in reply


def test_envelope_is_the_owners_alone(live: Any) -> None:
    http = live(ScriptedEngine(completion(ANSWER)), keys=("alice", "bob")).http()
    alice = {"Authorization": "Bearer alice"}
    answer = http.post(
        "/v1/responses", json={"model": "scripted-model", "input": "hi", "store": False}, headers=alice
    )
    response_id = answer.json()["id"]
    assert http.get(f"/v1/responses/{response_id}/envelope", headers=alice).status_code == 200
    other = http.get(f"/v1/responses/{response_id}/envelope", headers={"Authorization": "Bearer bob"})
    assert other.status_code == 404
    assert other.json()["error"]["code"] == "envelope_not_found"
    assert http.get(f"/v1/responses/{response_id}/envelope").status_code == 401
    unknown = http.get("/v1/responses/resp_unknown/envelope", headers=alice)
    assert unknown.status_code == 404 and unknown.json()["error"]["param"] == "response_id"


def test_no_envelope_route_where_none_is_recorded() -> None:
    engine = ScriptedEngine(completion(ANSWER))
    with LiveServer(service(engine, None)) as server:
        http = server.http()
        response = create(http, input="hi")
        answer = http.get(f"/v1/responses/{response['id']}/envelope")
        assert answer.status_code == 404
        assert answer.json()["error"]["code"] == "unknown_url"
        assert "/v1/responses/{response_id}/envelope" not in http.get("/openapi.json").json()["paths"]


def test_the_route_is_documented_where_recorded(live: Any) -> None:
    paths = live(ScriptedEngine(completion(ANSWER))).http().get("/openapi.json").json()["paths"]
    assert "get" in paths["/v1/responses/{response_id}/envelope"]


def test_bounds_responses_kept_and_ids_per_response(live: Any) -> None:
    script = completion(THINK, ANSWER)
    engine = ScriptedEngine(script)
    log = EnvelopeLog(max_responses=2, max_ids=len(script) + 5)
    http = live(engine, log).http()
    ids = [create(http, input="hi")["id"] for _ in range(3)]
    assert len(log) == 2
    assert http.get(f"/v1/responses/{ids[0]}/envelope").status_code == 404
    envelope = http.get(f"/v1/responses/{ids[2]}/envelope").json()
    [step] = envelope["steps"]
    prompt_length = len(engine.prompts[-1])
    assert prompt_length > len(script) + 5
    assert envelope["truncated"] is True and envelope["max_ids"] == len(script) + 5
    assert len(step["prompt"]["ids"]) == len(script) + 5
    assert step["prompt"]["omitted"] == prompt_length - len(script) - 5
    assert step["completion"]["ids"] == [] and step["completion"]["omitted"] == len(script)
    assert http.get(f"/v1/responses/{ids[1]}/envelope").status_code == 200


def test_the_oldest_unread_envelope_goes_first() -> None:
    log = EnvelopeLog(max_responses=2)
    engine = RecordingEngine(ScriptedEngine([1, 2, 3]), log)

    async def sample(response_id: str) -> None:
        record_response(response_id, "")
        async for _ in engine.generate([5, 6], SamplingParams()):
            pass

    async def main() -> None:
        for response_id in ("a", "b"):
            await asyncio.create_task(sample(response_id))
        assert log.get("a", "") is not None  # read: now the most recent
        await asyncio.create_task(sample("c"))

    asyncio.run(main())
    assert log.get("b", "") is None
    assert log.get("a", "") is not None and log.get("c", "") is not None


def test_a_completion_is_cut_at_the_bound_within_a_chunk() -> None:
    log = EnvelopeLog(max_ids=4)
    engine = RecordingEngine(ScriptedEngine([10, 11, 12, 13, 14], chunk=2), log)

    async def main() -> None:
        record_response("r", "")
        async for _ in engine.generate([1], SamplingParams()):
            pass

    asyncio.run(main())
    envelope = log.get("r", "")
    assert envelope is not None
    [step] = envelope.steps
    assert step.completion.ids.tolist() == [10, 11, 12] and step.completion.omitted == 2


def test_calls_outside_a_response_are_not_recorded() -> None:
    log = EnvelopeLog()
    inner = ScriptedEngine([1, 2])
    engine = RecordingEngine(inner, log)

    async def main() -> list[int]:
        return [token async for chunk in engine.generate([5], SamplingParams()) for token in chunk.ids]

    assert asyncio.run(main()) == [1, 2]
    assert len(log) == 0
    assert engine.info is inner.info and engine.tokenizer is None and engine.enforces_grammar is False


def test_pieces_split_inside_a_character() -> None:
    ids = ENCODING.encode("🦩")
    assert len(ids) > 1  # the flamingo takes several ids
    log = EnvelopeLog()
    engine = RecordingEngine(ScriptedEngine(ids, chunk=1), log)

    async def main() -> None:
        record_response("r", "")
        async for _ in engine.generate([1], SamplingParams()):
            pass

    asyncio.run(main())
    envelope = log.get("r", "")
    assert envelope is not None
    run = envelope.to_json(None)["steps"][0]["completion"]
    assert "".join(run["pieces"]) == "🦩" and run["pieces"][-1] == "🦩" and run["pieces"][0] == ""
    assert run["special"] == []


@pytest.mark.parametrize(
    ("host", "envelope", "expected"),
    [
        ("127.0.0.1", None, True),
        ("::1", None, True),
        ("localhost", None, True),
        ("127.0.0.2", None, True),
        ("0.0.0.0", None, False),
        ("::", None, False),
        ("10.1.2.3", None, False),
        ("example.org", None, False),
        ("0.0.0.0", True, True),
        ("127.0.0.1", False, False),
    ],
)
def test_envelope_default_is_loopback_only(host: str, envelope: bool | None, expected: bool) -> None:
    assert ServerConfig(host=host, envelope=envelope).records_envelopes is expected


def test_serve_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    import openchatml.server as server_module
    from openchatml import serve_cli

    seen: list[ServerConfig] = []

    def fake_serve(config: ServerConfig) -> int:
        seen.append(config)
        return 0

    monkeypatch.setattr(server_module, "serve", fake_serve)
    runner = CliRunner()
    for arguments in ([], ["--no-playground", "--envelope"], ["--host", "0.0.0.0", "--no-envelope"]):
        result = runner.invoke(serve_cli.serve, ["--model", "tiny-random", *arguments])
        assert result.exit_code == 0, result.output
    assert [(c.playground, c.envelope) for c in seen] == [(True, None), (False, True), (True, False)]
    assert seen[0].records_envelopes and seen[1].records_envelopes and not seen[2].records_envelopes


def test_envelope_of_a_chat_template_model(tmp_path: Path) -> None:
    """A template model's envelope is decoded with its own tokenizer: the template's
    markers are control tokens, a user's typed marker is text."""
    pytest.importorskip("torch")
    from openchatml.demo_models.catalog import ensure_demo_model
    from openchatml.engines.transformers import TransformersEngine
    from openchatml.responses.dialect import TemplateDialect

    engine = TransformersEngine.load(
        ensure_demo_model("tiny-chat-qwen3", tmp_path), model_id="q", device="cpu"
    )
    dialect = TemplateDialect.of_engine(engine)
    assert dialect is not None
    service = ResponseService(engine, None, sealer=Sealer(KEY), dialect=dialect, envelopes=EnvelopeLog())
    server = LiveServer(service).__enter__()
    try:
        http = server.http()
        typed = "Hi <|im_start|> there"
        response = create(http, model="q", input=typed, max_output_tokens=6, temperature=0)
        envelope = http.get(f"/v1/responses/{response['id']}/envelope").json()
    finally:
        server.__exit__()
    assert envelope["format"] == "chat_template"
    [step] = envelope["steps"]
    prompt = step["prompt"]
    assert joined(prompt) == engine.tokenizer.decode(prompt["ids"])
    assert typed in joined(prompt) and "<|im_start|>user" in joined(prompt)
    specials = [prompt["pieces"][i] for i in prompt["special"]]
    assert specials.count("<|im_start|>") == joined(prompt).count("<|im_start|>") - 1  # the typed one is text
    assert 0 < len(step["completion"]["ids"]) <= 6
