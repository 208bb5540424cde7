"""The Open Responses server: ``openchatml serve``.

``build(config)`` opens the engine and store a :class:`~.config.ServerConfig` names and
returns the ASGI app; ``serve(config)`` runs it with uvicorn until interrupted, on a
socket bound before the model loads (:mod:`.listener`).
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from fastapi import FastAPI

from ..engines.base import EngineError
from ..responses.crypto import Sealer
from ..responses.dialect import TemplateDialect
from ..responses.input import PromptSettings
from ..tools.python import Sandbox, SandboxUnavailableError
from .admission import Admission
from .app import create_app
from .auth import KeyChecker
from .config import ConfigError, ServerConfig, open_engine, open_store, sealing_key
from .envelopes import EnvelopeLog
from .limits import Limits
from .service import ResponseService
from .settings import BrowserSettings, PythonSettings, ServiceSettings

__all__ = ["ConfigError", "ServerConfig", "build", "serve"]


async def build(config: ServerConfig, *, say: Callable[[str], None] = lambda line: None) -> FastAPI:
    """The app for ``config``: engine loaded, store opened (responses that stopped servers
    left unfinished marked failed, expired ones evicted). Raises :class:`ConfigError`."""
    python = python_settings(config, say)
    browser = browser_settings(config, say)
    if config.mcp is not None:
        servers = ", ".join(server.label for server in config.mcp.servers) or "none"
        say(f"mcp: on, URL prefixes allowed: {len(config.mcp.allow)}, servers configured: {servers}")
    say(f"loading model {config.model if not config.upstream else config.upstream} …")
    engine = await open_engine(config, say)
    store = open_store(config)
    if store is not None:
        await store.open()
        interrupted = await store.interrupt_unfinished()
        evicted = await store.evict(int(time.time()))
        if interrupted or evicted:
            say(f"store: {interrupted} left by stopped servers marked failed, {evicted} expired removed")
    try:
        dialect = TemplateDialect.of_engine(engine)
    except EngineError as exc:
        await engine.aclose()
        hint = "Serve a gpt-oss model, or one whose chat template can be analysed."
        raise ConfigError(f"{exc}. {hint}") from None
    if dialect is not None:
        fmt = dialect.format
        say(f"chat template: {fmt.tools.syntax.value} tool calls, reasoning {fmt.reasoning.mode.value}")
    service = ResponseService(
        engine,
        store,
        dialect=dialect,
        sealer=Sealer(sealing_key(config.home)),
        settings=ServiceSettings(
            prompt=PromptSettings(),
            limits=config.request_limits,
            ttl_seconds=config.ttl_seconds,
            wire=config.wire,
            default_max_output_tokens=config.default_max_output_tokens,
            python=python,
            browser=browser,
            mcp=config.mcp,
        ),
        admission=Admission(config.running_limit(), config.max_queued, config.max_per_key),
        envelopes=EnvelopeLog() if config.records_envelopes else None,
    )
    if config.records_envelopes:
        say("envelope: on, each response's token ids kept in memory (GET /v1/responses/{id}/envelope)")

    async def shutdown() -> None:
        await engine.aclose()
        if store is not None:
            await store.close()

    return create_app(
        service,
        keys=KeyChecker(config.api_keys),
        limits=Limits(
            config.max_body_bytes,
            config.requests_per_minute,
            auth_failures_per_minute=config.auth_failures_per_minute,
        ),
        on_shutdown=shutdown,
        cors_origins=config.cors_origins,
        playground=config.playground,
    )


def python_settings(config: ServerConfig, say: Callable[[str], None]) -> PythonSettings | None:
    """The hosted ``python`` tool's settings, or ``None`` where it is off (said in one
    line); raises :class:`ConfigError` when it is asked for and bubblewrap cannot confine it."""
    if config.python is False:
        return None
    settings = config.python_settings
    try:
        Sandbox(unsafe=settings.unsafe)
    except SandboxUnavailableError as exc:
        if config.python:
            raise ConfigError(f"--python: {exc}") from None
        say(f"python tool: off ({exc}; --python-unsafe runs it unconfined, trusted use only)")
        return None
    how = "UNCONFINED (--python-unsafe)" if settings.unsafe else "confined by bubblewrap"
    say(f"python tool: on, {how}, {settings.timeout:g} s per cell, at most {settings.max_kernels} kernels")
    return settings


def browser_settings(config: ServerConfig, say: Callable[[str], None]) -> BrowserSettings | None:
    """The hosted browser's settings (a corpus's index kept under the data directory), or
    ``None`` where it is off; raises :class:`ConfigError` for a corpus folder that is not one."""
    settings = config.browser
    if settings is None:
        return None
    if settings.corpus is not None:
        folder = Path(settings.corpus).expanduser().resolve()
        if not folder.is_dir():
            raise ConfigError(f"--browser-corpus: {settings.corpus} is not a folder")
        index = settings.index or str(config.home / "browser" / f"{settings.corpus_name}.sqlite3")
        Path(index).parent.mkdir(parents=True, exist_ok=True)
        settings = replace(settings, corpus=str(folder), index=index)
        say(f"browser: on, searching the files of {folder} (corpus://{settings.corpus_name}/…)")
    else:
        keyed = "with a key" if settings.search_key else "without a key"
        say(f"browser: on, searching through {settings.search_url} ({keyed})")
    return settings


def serve(config: ServerConfig) -> int:
    """Run the server until interrupted (Ctrl-C or SIGTERM: a graceful stop, status 0);
    the exit status (1 when it cannot listen where it is told, said before the model
    loads; 2 when the configuration cannot be served). It says it serves once it accepts
    connections; its logs go to standard error at ``config.log_level``."""
    import uvicorn

    from .listener import AnnouncingServer, ListenError, bind, configure_logging, uvicorn_level

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    configure_logging(config.log_level)
    try:
        listener = bind(config.host, config.port)
    except ListenError as exc:
        say(f"error: {exc}")
        return 1
    port = listener.getsockname()[1]

    async def main() -> int:
        try:
            app = await build(config, say=say)
        except ConfigError as exc:
            say(f"error: {exc}")
            return 2
        info = app.state.service.engine.info
        store = app.state.service.store
        where = f"{info.engine}, {info.device}" if info.device else info.engine
        keys = ", API keys required" if config.api_keys else ""
        host = f"[{config.host}]" if ":" in config.host else config.host
        line = (
            f"openchatml serving {info.id} ({where}) on http://{host}:{port}/v1/responses"
            f" — store: {store if store is not None else 'none'}{keys}"
        )
        if config.playground:
            line += f"\nplayground: open http://{host}:{port}/ in a browser"
        options = app.state.limits.uvicorn_options()
        level = uvicorn_level(config.log_level)
        server = AnnouncingServer(
            uvicorn.Config(app, host=config.host, port=port, log_level=level, access_log=False, **options),
            lambda: say(line),
        )
        try:
            await server.serve(sockets=[listener])
        except OSError as exc:
            say(f"error: cannot listen on {config.host}:{port}: {exc.strerror or exc}")
            return 1
        return 0

    def terminate(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # uvicorn shuts down gracefully on SIGINT / SIGTERM, then raises the signal again:
    # both end here as a clean exit.
    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        say("openchatml stopped")
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
        listener.close()
