"""``openchatml serve``: the command that runs the Open Responses server, and its options
(see docs/server.md and docs/tools.md)."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

import click

from .responses.limits import DEFAULT_LIMITS, DEFAULT_MAX_OUTPUT_TOKENS


@click.command()
@click.option(
    "--model",
    default=None,
    metavar="NAME|PATH",
    help="Model to serve: a hub id, a local folder, or a demo model built offline in seconds: "
    "'tiny' (a tiny gpt-oss trained to speak Harmony: greets, calls a get_weather tool), "
    "'tiny-random' (the same shape with random weights), 'tiny-chat-qwen3' or "
    "'tiny-chat-llama' (random-weight models of those families with their chat template). "
    "Default: openai/gpt-oss-20b.",
)
@click.option("--upstream", metavar="URL", help="Serve through a vLLM / llama.cpp server's /v1/completions.")
@click.option(
    "--upstream-api-key", metavar="KEY", envvar="OPENCHATML_UPSTREAM_API_KEY", help="Key for --upstream."
)
@click.option(
    "--tokenizer",
    metavar="PATH",
    help="With --upstream: the model's tokenizer (folder or hub id); its chat template serves other models.",
)
@click.option(
    "--served-model-name", metavar="NAME", help="The model id clients use (default: from the model)."
)
@click.option("--device", metavar="DEV", help="Device for the transformers engine (cpu, cuda, cuda:1 …).")
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    metavar="N",
    help="In process: requests decoded together in one batch (default 16).",
)
@click.option(
    "--batch-tokens",
    type=click.IntRange(min=1),
    metavar="N",
    help="In process: the most KV-cache tokens the batch holds, padding included (default: no bound).",
)
@click.option(
    "--store",
    default="sqlite",
    show_default=True,
    metavar="SPEC",
    help="sqlite (in the data directory), sqlite:///PATH, postgresql://… or none.",
)
@click.option(
    "--data-dir", type=click.Path(path_type=Path), help="Data directory (default $OPENCHATML_HOME)."
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option(
    "--api-key",
    "api_keys",
    multiple=True,
    metavar="KEY",
    help="Require this bearer key (repeatable; also $OPENCHATML_API_KEYS, comma-separated).",
)
@click.option("--rate-limit", type=int, metavar="N", help="Requests per minute per key (429 beyond).")
@click.option(
    "--auth-failures-per-minute",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    metavar="N",
    help="Failed authentications per minute per client address (then 429 for it; 0: no limit).",
)
@click.option(
    "--max-running",
    type=click.IntRange(min=0),
    metavar="N",
    help="Responses generating at once (default: --batch-size in process, 16 with --upstream; 0: no limit).",
)
@click.option(
    "--max-queued",
    type=click.IntRange(min=0),
    default=32,
    show_default=True,
    metavar="N",
    help="Responses waiting for the engine beyond --max-running (then 503; 0: no limit).",
)
@click.option(
    "--max-per-key",
    type=click.IntRange(min=0),
    default=8,
    show_default=True,
    metavar="N",
    help="Responses one API key has queued or running at once (then 429; 0: no limit).",
)
@click.option("--max-body-mb", type=float, default=32.0, show_default=True, help="Largest request body.")
@click.option(
    "--max-input-tokens",
    type=click.IntRange(min=0),
    metavar="N",
    help="Prompt tokens one response may have, whatever the context window (0 or unset: the window).",
)
@click.option(
    "--max-input-items",
    type=click.IntRange(min=1),
    default=DEFAULT_LIMITS.max_input_items,
    show_default=True,
    metavar="N",
    help="Items in one request's input (400 beyond).",
)
@click.option(
    "--max-conversation-items",
    type=click.IntRange(min=1),
    default=DEFAULT_LIMITS.max_conversation_items,
    show_default=True,
    metavar="N",
    help="Items of a conversation: its previous_response_id chain plus the new input (400 beyond).",
)
@click.option(
    "--ttl-days", type=float, default=30.0, show_default=True, help="Stored responses expire after."
)
@click.option(
    "--wire",
    type=click.Choice(["auto", "openai", "openresponses"]),
    default="auto",
    show_default=True,
    help="How answers are spelled: openresponses (the Open Responses schema's names, e.g. "
    "response.reasoning.delta), openai (OpenAI's, e.g. response.reasoning_text.delta), or auto: "
    "openai for OpenAI's SDKs and Codex, openresponses for other clients. "
    "A request's OpenChatML-Wire header overrides it.",
)
@click.option(
    "--default-max-output-tokens",
    type=click.IntRange(min=0),
    default=DEFAULT_MAX_OUTPUT_TOKENS,
    show_default=True,
    metavar="N",
    help="Output tokens a response may sample when its request sets no max_output_tokens "
    "(0: the context window's room after the prompt).",
)
@click.option(
    "--cors-origin",
    "cors_origins",
    multiple=True,
    metavar="ORIGIN",
    help="Let browser pages from ORIGIN (https://app.example:8080, or * for any) call the API "
    "(repeatable; default: none).",
)
@click.option(
    "--playground/--no-playground",
    default=True,
    show_default=True,
    help="Serve the playground page at / (a chat with the model, its channels and raw tokens).",
)
@click.option(
    "--envelope/--no-envelope",
    default=None,
    help="Keep each response's token ids in memory for GET /v1/responses/{id}/envelope (they show "
    "the system prompt and hidden reasoning). Default: on only where --host is a loopback address.",
)
@click.option(
    "--python/--no-python",
    "python",
    default=None,
    help="The hosted python tool (code_interpreter, gpt-oss only), kernels confined by bubblewrap. "
    "Default: on where bubblewrap works; --python fails to start (status 2) where it does not.",
)
@click.option(
    "--python-unsafe",
    is_flag=True,
    help="Run the python tool's kernels without bubblewrap (trusted use only).",
)
@click.option(
    "--python-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=120.0,
    show_default=True,
    metavar="SECONDS",
    help="How long one python cell may run.",
)
@click.option(
    "--python-max-kernels",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    metavar="N",
    help="Python kernels running at once (the least recently used idle one makes room).",
)
@click.option(
    "--python-idle-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    metavar="SECONDS",
    help="A python kernel unused this long is stopped (its state lost).",
)
@click.option(
    "--browser-corpus",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    metavar="DIR",
    help="The hosted browser (web_search, gpt-oss only) searches the HTML, Markdown, text and PDF "
    "files under DIR (indexed in SQLite FTS5 under the data directory). Default: no browser.",
)
@click.option(
    "--browser-corpus-name",
    default="local",
    show_default=True,
    metavar="NAME",
    help="The corpus's name: its pages' URLs are corpus://NAME/PATH.",
)
@click.option(
    "--browser-search-url",
    metavar="URL",
    help="The hosted browser searches through the web search API at URL (POST URL/search and "
    "URL/contents; see docs/tools.md) instead of a corpus.",
)
@click.option(
    "--browser-search-key-env",
    default="OPENCHATML_SEARCH_API_KEY",
    show_default=True,
    metavar="VAR",
    help="The environment variable holding the search API's key (never given on the command line).",
)
@click.option(
    "--browser-search-key-header",
    default="authorization",
    show_default=True,
    metavar="NAME",
    help="The header the key goes in: authorization (Bearer KEY), or another sent as is (x-api-key).",
)
@click.option(
    "--mcp-allow",
    "mcp_allow",
    multiple=True,
    metavar="URL-PREFIX",
    help="A request's mcp tool may connect to a server_url under this prefix (same scheme, host and "
    "port; the path on segment boundaries). Repeatable. Default: no URL (MCP off unless --mcp-server).",
)
@click.option(
    "--mcp-server",
    "mcp_servers",
    multiple=True,
    metavar="LABEL=URL",
    help="An MCP server a request names by server_label alone; its headers come from the environment "
    "variable OPENCHATML_MCP_HEADERS_<LABEL> (a JSON object). Repeatable.",
)
@click.option(
    "--mcp-call-timeout",
    type=click.FloatRange(min=0.1),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="How long an MCP server may take to list its tools or answer a call.",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
    help="info: an access-log line per answer; warning: only what went wrong.",
)
def serve(
    model: str | None,
    upstream: str | None,
    upstream_api_key: str | None,
    tokenizer: str | None,
    served_model_name: str | None,
    device: str | None,
    batch_size: int | None,
    batch_tokens: int | None,
    store: str,
    data_dir: Path | None,
    host: str,
    port: int,
    api_keys: tuple[str, ...],
    rate_limit: int | None,
    auth_failures_per_minute: int,
    max_running: int | None,
    max_queued: int,
    max_per_key: int,
    max_body_mb: float,
    max_input_tokens: int | None,
    max_input_items: int,
    max_conversation_items: int,
    ttl_days: float,
    wire: str,
    default_max_output_tokens: int,
    cors_origins: tuple[str, ...],
    playground: bool,
    envelope: bool | None,
    python: bool | None,
    python_unsafe: bool,
    python_timeout: float,
    python_max_kernels: int,
    python_idle_seconds: float,
    browser_corpus: Path | None,
    browser_corpus_name: str,
    browser_search_url: str | None,
    browser_search_key_env: str,
    browser_search_key_header: str,
    mcp_allow: tuple[str, ...],
    mcp_servers: tuple[str, ...],
    mcp_call_timeout: float,
    log_level: str,
) -> None:
    """Serve the Open Responses API (/v1/responses: JSON, SSE, WebSocket) over a model."""
    from .engines.batching import DEFAULT_BATCH_SIZE
    from .server import ServerConfig
    from .server import serve as run_server
    from .server.config import DEFAULT_MODEL, default_home
    from .server.settings import BrowserSettings, PythonSettings

    if tokenizer and not upstream:
        raise click.UsageError("--tokenizer goes with --upstream (a local model brings its own tokenizer)")
    if upstream and (batch_size is not None or batch_tokens is not None):
        raise click.UsageError("--batch-size and --batch-tokens size the in-process engine, not --upstream")
    if browser_corpus is not None and browser_search_url:
        raise click.UsageError(
            "the browser searches a corpus (--browser-corpus) or an API (--browser-search-url), not both"
        )
    browser = None
    if browser_corpus is not None or browser_search_url:
        browser = BrowserSettings(
            corpus=str(browser_corpus) if browser_corpus is not None else None,
            corpus_name=browser_corpus_name,
            search_url=browser_search_url or None,
            search_key=os.environ.get(browser_search_key_env) or None,
            search_key_header=browser_search_key_header,
        )
    from .server.mcp_sessions import mcp_settings

    try:
        mcp = mcp_settings(mcp_allow, mcp_servers, os.environ, call_timeout=mcp_call_timeout)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    env_keys = tuple(k.strip() for k in os.environ.get("OPENCHATML_API_KEYS", "").split(",") if k.strip())
    if model is None and not upstream:
        click.echo(
            f"no --model given: serving {DEFAULT_MODEL} (--model tiny: a small trained demo model, offline)",
            err=True,
        )
    config = ServerConfig(
        model=model or DEFAULT_MODEL,
        upstream=upstream,
        upstream_api_key=upstream_api_key,
        tokenizer=tokenizer,
        device=device,
        batch_size=batch_size or DEFAULT_BATCH_SIZE,
        batch_tokens=batch_tokens,
        store=store,
        home=data_dir or default_home(),
        host=host,
        port=port,
        api_keys=api_keys + env_keys,
        requests_per_minute=rate_limit,
        auth_failures_per_minute=auth_failures_per_minute,
        max_running=max_running,
        max_queued=max_queued,
        max_per_key=max_per_key,
        max_body_bytes=int(max_body_mb * 1024 * 1024),
        request_limits=replace(
            DEFAULT_LIMITS,
            max_input_tokens=max_input_tokens or None,
            max_input_items=max_input_items,
            max_conversation_items=max_conversation_items,
        ),
        ttl_seconds=int(ttl_days * 86400) if ttl_days > 0 else None,
        served_name=served_model_name,
        wire=wire,
        default_max_output_tokens=default_max_output_tokens or None,
        cors_origins=cors_origins,
        playground=playground,
        envelope=envelope,
        log_level=log_level,
        python=True if python_unsafe and python is None else python,
        python_settings=PythonSettings(
            unsafe=python_unsafe,
            timeout=python_timeout,
            max_kernels=python_max_kernels,
            idle_seconds=python_idle_seconds,
        ),
        browser=browser,
        mcp=mcp,
    )
    sys.exit(run_server(config))
