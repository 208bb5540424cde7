"""The hosted tools for a model that does not speak Harmony: a Qwen3 chat template (its
tokenizer from a tiny random-weight Qwen3) gets ``python`` and the browser's actions as
functions, a scripted model calls two of them in one turn, the server runs both at once
(the search API is reached while the python cell still runs), renders the conversation
again with the tools' outputs and samples the answer in the same response. The browser
searches a web search API (a fake one on loopback, its key from the settings)."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from live import KEY, LiveServer, ScriptedEngine
from openai.types.responses import ResponseCodeInterpreterToolCall, ResponseFunctionWebSearch
from sdk import validate_openai_event, validate_openai_response

from openchatml.engines.base import ModelInfo
from openchatml.responses.crypto import Sealer
from openchatml.responses.dialect import TemplateDialect
from openchatml.server.service import ResponseService
from openchatml.server.settings import BrowserSettings, McpSettings, PythonSettings, ServiceSettings
from openchatml.server.store.sqlite import SQLiteStore

sys.path.insert(0, str(Path(__file__).parents[1] / "tools" / "python"))
from bwrap_setup import ensure_bwrap

from openchatml.tools.python import Sandbox, SandboxUnavailableError

TEMPLATE = Path(__file__).parents[1] / "templates" / "data" / "templates" / "Qwen-Qwen3-0.6B.jinja"
API_KEY = "sk-search-test"
TOOLS: list[Any] = [{"type": "code_interpreter", "container": {"type": "auto"}}, {"type": "web_search"}]
SEARCH_SECONDS = 1.5
CELL = "import time\nprint('start', time.time(), flush=True)\ntime.sleep(3)\nprint('end', time.time())"


class SlowSearchApi(BaseHTTPRequestHandler):
    """The web search protocol of ``HttpSearchBackend``, answering each search after
    :data:`SEARCH_SECONDS`: records when each came and when its answer went."""

    hits: ClassVar[list[tuple[float, float]]] = []
    keys: ClassVar[list[str | None]] = []

    def do_POST(self) -> None:
        came = time.time()
        time.sleep(SEARCH_SECONDS)
        SlowSearchApi.hits.append((came, time.time()))
        SlowSearchApi.keys.append(self.headers.get("authorization"))
        payload = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        query = str(payload.get("query", ""))
        body = {"results": [{"url": "https://lighthouse.example/", "title": "Lighthouse", "text": query}]}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def search_api() -> Iterator[str]:
    SlowSearchApi.hits, SlowSearchApi.keys = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowSearchApi)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture(scope="module")
def qwen_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The tiny Qwen3's tokenizer, carrying the Qwen3 chat template."""
    pytest.importorskip("torch", reason="the demo models need torch")
    from openchatml.demo_models.tiny_chat import ensure_tiny_chat_model
    from openchatml.engines.tokenizer import HFTokenizer

    folder = ensure_tiny_chat_model(tmp_path_factory.mktemp("home"), TEMPLATE, family="qwen3")
    return HFTokenizer.load(folder)


@pytest.fixture
def settings(search_api: str) -> ServiceSettings:
    if ensure_bwrap() is None:
        pytest.skip("bwrap is not installed and cannot be installed here")
    try:
        Sandbox()
    except SandboxUnavailableError as exc:
        pytest.skip(str(exc))
    browser = BrowserSettings(search_url=search_api, search_key=API_KEY)
    return ServiceSettings(python=PythonSettings(timeout=60.0), browser=browser)


def call(name: str, arguments: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


class TemplateScript(ScriptedEngine):
    """Plays back, under the Qwen3 tokenizer, two calls in one turn (python and a search),
    then, once the prompt holds their outputs, an answer quoting them."""

    def __init__(self, tokenizer: Any) -> None:
        super().__init__(self.script, tokenizer=tokenizer)
        self.tokenizer = tokenizer
        self._info = ModelInfo(id="scripted-qwen3", context_length=8192, engine="scripted")

    def script(self, prompt: Sequence[int]) -> list[int]:
        text = self.tokenizer.decode(list(prompt))
        if "<tool_response>" not in text:
            calls = call("python", {"code": CELL}) + "\n" + call("browser.search", {"query": "keeper"})
            return list(self.tokenizer.encode("<think>\nBoth at once.\n</think>\n\n" + calls + "<|im_end|>"))
        return list(self.tokenizer.encode("<think>\nDone.\n</think>\n\nBoth tools answered.<|im_end|>"))


def serve_template(engine: Any, settings: ServiceSettings, tmp_path: Path) -> LiveServer:
    dialect = TemplateDialect.of_engine(engine)
    assert dialect is not None
    store = SQLiteStore(tmp_path / "store.sqlite3")
    service = ResponseService(engine, store, sealer=Sealer(KEY), dialect=dialect, settings=settings)
    return LiveServer(service).__enter__()


def test_two_hosted_calls_in_one_turn_run_at_once(
    qwen_tokenizer: Any, settings: ServiceSettings, tmp_path: Path
) -> None:
    engine = TemplateScript(qwen_tokenizer)
    server = serve_template(engine, settings, tmp_path)
    try:
        client = server.client()
        events = list(
            client.responses.create(
                model="scripted-qwen3",
                input="Run the cell and search for the keeper.",
                tools=TOOLS,
                include=["code_interpreter_call.outputs"],
                stream=True,
            )
        )
    finally:
        server.__exit__()
    for event in events:
        validate_openai_event(event.model_dump(mode="json"))
    final = events[-1].response  # type: ignore[union-attr]
    validate_openai_response(final.model_dump(mode="json"))
    assert final.status == "completed", final.error
    kinds = [item.type for item in final.output]
    assert kinds == ["reasoning", "code_interpreter_call", "web_search_call", "reasoning", "message"], kinds
    cell, search = final.output[1], final.output[2]
    assert isinstance(cell, ResponseCodeInterpreterToolCall) and cell.status == "completed"
    assert cell.code == CELL and cell.outputs is not None
    logs = cell.outputs[0].logs  # type: ignore[union-attr]
    started = float(logs.split("start ")[1].split()[0])
    ended = float(logs.split("end ")[1].split()[0])
    assert isinstance(search, ResponseFunctionWebSearch) and search.status == "completed"
    assert search.action.type == "search" and search.action.query == "keeper"
    [(came, answered)] = SlowSearchApi.hits
    assert came < ended and started < answered  # the search and the cell ran at the same time
    assert SlowSearchApi.keys == [f"Bearer {API_KEY}"]
    order = [event.type for event in events]
    running = [
        order.index("response.code_interpreter_call.interpreting"),
        order.index("response.web_search_call.searching"),
    ]
    finished = [
        order.index("response.code_interpreter_call.completed"),
        order.index("response.web_search_call.completed"),
    ]
    assert max(running) < min(finished)  # both started before either finished
    second = qwen_tokenizer.decode(list(engine.prompts[1]))
    assert "<tool_response>" in second and "start" in second and "Lighthouse" in second
    first = qwen_tokenizer.decode(list(engine.prompts[0]))
    assert '"name": "python"' in first and '"name": "browser.search"' in first  # offered as functions
    assert final.output[-1].content[0].text == "Both tools answered."  # type: ignore[union-attr]


class McpScript(ScriptedEngine):
    """Plays back, under the Qwen3 tokenizer, a call of the MCP server's ``demo.add``, then,
    once the prompt holds its output, an answer quoting it."""

    def __init__(self, tokenizer: Any) -> None:
        super().__init__(self.script, tokenizer=tokenizer)
        self.tokenizer = tokenizer
        self._info = ModelInfo(id="scripted-qwen3", context_length=8192, engine="scripted")

    def script(self, prompt: Sequence[int]) -> list[int]:
        text = self.tokenizer.decode(list(prompt))
        if "<tool_response>" not in text:
            return list(self.tokenizer.encode(call("demo.add", {"a": 20, "b": 22}) + "<|im_end|>"))
        said = text.rsplit("<tool_response>", 1)[1].split("</tool_response>", 1)[0].strip()
        return list(self.tokenizer.encode(f"The sum is {said}.<|im_end|>"))


def test_an_mcp_server_serves_a_template_model(qwen_tokenizer: Any, mcp_server: Any, tmp_path: Path) -> None:
    """A template model calls an MCP server's tool as the function ``demo.add``: without
    approval the call runs in the loop; with approval the response stops at the request,
    and the approving request runs the call before the model answers."""
    settings = ServiceSettings(mcp=McpSettings(allow=(f"http://127.0.0.1:{mcp_server.http_port}/mcp",)))
    engine = McpScript(qwen_tokenizer)
    server = serve_template(engine, settings, tmp_path)
    tool = {
        "type": "mcp",
        "server_label": "demo",
        "server_url": mcp_server.http_url,
        "headers": mcp_server.auth,
        "require_approval": "never",
    }
    try:
        client = server.client()
        direct = client.responses.create(model="scripted-qwen3", input="20+22?", tools=[tool])
        asked = client.responses.create(
            model="scripted-qwen3", input="20+22?", tools=[{**tool, "require_approval": "always"}]
        )
        approval = {
            "type": "mcp_approval_response",
            "approval_request_id": asked.output[1].id,
            "approve": True,
        }
        approved = client.responses.create(
            model="scripted-qwen3",
            input=[approval],
            tools=[{**tool, "require_approval": "always"}],
            previous_response_id=asked.id,
        )
    finally:
        server.__exit__()
    for response in (direct, asked, approved):
        validate_openai_response(response.model_dump(mode="json"))
    assert [item.type for item in direct.output] == ["mcp_list_tools", "mcp_call", "message"]
    assert direct.output[1].output == "42"  # type: ignore[union-attr]
    assert direct.output[2].content[0].text == "The sum is 42."  # type: ignore[union-attr]
    assert [item.type for item in asked.output] == ["mcp_list_tools", "mcp_approval_request"]
    assert [item.type for item in approved.output] == ["mcp_call", "message"]
    assert approved.output[0].output == "42" and approved.output[1].content[0].text == "The sum is 42."  # type: ignore[union-attr]
    first = qwen_tokenizer.decode(list(engine.prompts[0]))
    assert '"name": "demo.add"' in first  # offered as a function
