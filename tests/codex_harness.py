"""Real client programs for tests: the Codex CLI, the official JavaScript SDK and the
OpenAI Agents SDK for JavaScript, from npm.

``ensure_node_clients`` installs ``@openai/codex`` (whose native binary ships inside its
npm package, with a bundled bubblewrap for its Linux sandbox), ``openai`` (the
JavaScript SDK), ``@openai/agents`` and its peer ``zod`` once into
``$OPENCHATML_HOME/node-clients/<versions>/`` (default ``~/.cache/openchatml``) with one
``npm install``; a stamp file written last marks a finished install, and a file lock
keeps pytest processes from installing at once.

``codex_config`` writes the ``config.toml`` that points Codex at an Open Responses
server: a model provider with ``wire_api = "responses"`` and a key read from an
environment variable, with everything that would reach outside turned off (plugin
marketplace sync, apps, the update check, analytics, feedback, telemetry export).
``CodexHome`` runs ``codex exec`` (and ``codex exec resume``) with such a config in its
own ``CODEX_HOME``, in a scratch folder, under Codex's read-only sandbox.

``OPENCHATML_TEST_CLIENTS`` says whether the tests use them: ``0`` skips those tests;
anything else (the default) runs them. Where ``npm`` is absent they are skipped, with
the reason in the summary (``1`` makes that an error too); an install that fails is
always an error.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine_process import locked, openchatml_home, tail

CODEX_VERSION = "0.169.0"
"""``@openai/codex`` on npm."""
OPENAI_JS_VERSION = "7.57.0"
"""``openai``, the official JavaScript SDK, on npm."""
AGENTS_JS_VERSION = "0.20.0"
"""``@openai/agents``, the OpenAI Agents SDK for JavaScript, on npm."""
ZOD_VERSION = "4.6.7"
"""``zod`` on npm: the schema library ``@openai/agents`` takes tool parameters in (its peer)."""
MODE = os.environ.get("OPENCHATML_TEST_CLIENTS", "")
"""``0``: off; ``1``: required (a missing ``npm`` fails the tests); anything else: on,
skipped only where ``npm`` is absent."""
API_KEY_VARIABLE = "OPENCHATML_API_KEY"
"""The environment variable Codex reads the server's key from (``env_key``)."""
PROVIDER = "openchatml"
"""The model provider's id in Codex's ``config.toml``."""
JS_DIR = Path(__file__).parent / "clients" / "js"
"""The node scripts of the JavaScript SDK and Agents SDK tests."""
WEBSOCKET_FEATURE = "responses_websockets_v2"
"""The Codex feature that speaks the Responses API's WebSocket mode (to a provider with
``supports_websockets = true``)."""

_STAMP = "openchatml-node-clients.json"
_RECIPE = 1

OUTSIDE_OFF = """\
check_for_update_on_startup = false

[features]
plugins = false
apps = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
trace_exporter = "none"
metrics_exporter = "none"
"""
"""What keeps Codex from reaching outside: no plugin marketplace sync (a ``git ls-remote``
of a GitHub repository at start), no apps, no update check, no analytics or feedback,
no OpenTelemetry export."""


class ClientHarnessError(RuntimeError):
    """A client program could not be installed; the message ends with the log's tail."""


class NpmMissingError(ClientHarnessError):
    """``npm`` is not on this machine."""


def _packages() -> dict[str, str]:
    return {
        "@openai/codex": CODEX_VERSION,
        "openai": OPENAI_JS_VERSION,
        "@openai/agents": AGENTS_JS_VERSION,
        "zod": ZOD_VERSION,
    }


def _wanted() -> dict[str, object]:
    return {**_packages(), "recipe": _RECIPE}


@dataclass(frozen=True)
class NodeClients:
    """The installed client programs and SDKs: ``root`` holds ``node_modules``;
    ``install_seconds`` is how long ``ensure_node_clients`` took (0 when cached)."""

    root: Path
    install_seconds: float

    @property
    def codex(self) -> Path:
        """The ``codex`` command (npm's launcher of the native binary)."""
        return self.root / "node_modules" / ".bin" / "codex"

    @property
    def sandbox_bin(self) -> Path:
        """A folder holding ``codex-linux-sandbox``, the name under which Codex's binary runs
        a command in its sandbox: with the system's ``bwrap`` Codex runs that name through
        ``PATH`` inside a sandbox whose ``/tmp`` is fresh, so its own link there is not seen."""
        folder = self.root / "sandbox-bin"
        link = folder / "codex-linux-sandbox"
        if not link.exists():
            binary = next((self.root / "node_modules" / "@openai").glob("codex-linux-*/vendor/*/bin/codex"))
            folder.mkdir(exist_ok=True)
            link.symlink_to(binary)
        return folder

    @property
    def node_modules(self) -> Path:
        """The folder a node script finds ``openai`` and ``@openai/agents`` in (``NODE_PATH``)."""
        return self.root / "node_modules"


def node_clients_dir(home: Path | None = None) -> Path:
    """``<home>/node-clients/codex-<v>-openai-<v>-agents-<v>``: where :func:`ensure_node_clients`
    installs."""
    root = home if home is not None else openchatml_home()
    name = f"codex-{CODEX_VERSION}-openai-{OPENAI_JS_VERSION}-agents-{AGENTS_JS_VERSION}"
    return root / "node-clients" / name


def _is_ready(root: Path) -> bool:
    try:
        stamp = json.loads((root / _STAMP).read_text())
    except (OSError, ValueError):
        return False
    return stamp == _wanted() and (root / "node_modules" / ".bin" / "codex").exists()


def _npm_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(npm_config_audit="false", npm_config_fund="false", npm_config_update_notifier="false")
    return env


def _debian_npm() -> str | None:
    """``npm`` from Debian's packages (with node), installed as root where apt-get is; the
    path of ``npm`` then, else ``None``."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return None
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for step in (["install"], ["update", "-q"], ["install"]):
        command = ["apt-get", *step, *(["-y", "-q", "nodejs", "npm"] if step == ["install"] else [])]
        subprocess.run(command, env=env, check=False, capture_output=True, timeout=900)
        if step == ["install"] and shutil.which("npm") is not None:
            break
    return shutil.which("npm")


def ensure_node_clients(home: Path | None = None) -> NodeClients:
    """Codex, the JavaScript SDK and the Agents SDK, installed on first use; returns where
    they are.

    Raises :class:`NpmMissingError` when ``npm`` is not on the PATH, and
    :class:`ClientHarnessError` with the install log's tail when ``npm install`` fails.
    """
    root = node_clients_dir(home)
    if _is_ready(root):
        return NodeClients(root, 0.0)
    npm = shutil.which("npm") or _debian_npm()
    if npm is None:
        raise NpmMissingError("the client tests need npm and node (Debian: apt-get install npm)")
    started = time.monotonic()
    with locked(root.parent / f"{root.name}.lock"):
        if _is_ready(root):
            return NodeClients(root, 0.0)
        (root / _STAMP).unlink(missing_ok=True)
        shutil.rmtree(root / "node_modules", ignore_errors=True)
        root.mkdir(parents=True, exist_ok=True)
        package = {
            "name": "openchatml-test-clients",
            "private": True,
            "dependencies": _packages(),
        }
        (root / "package.json").write_text(json.dumps(package, indent=2) + "\n")
        log_path = root / "install.log"
        step = [npm, "install", "--no-audit", "--no-fund", "--no-package-lock"]
        with log_path.open("wb") as log:
            log.write(f"$ {' '.join(step)}\n".encode())
            log.flush()
            done = subprocess.run(
                step, cwd=root, stdout=log, stderr=subprocess.STDOUT, env=_npm_env(), check=False
            )
        if done.returncode != 0 or not (root / "node_modules" / ".bin" / "codex").exists():
            raise ClientHarnessError(f"npm install failed ({done.returncode}); {log_path}:\n{tail(log_path)}")
        seconds = time.monotonic() - started
        with log_path.open("a") as log:
            log.write(f"installed in {seconds:.1f} s\n")
        (root / _STAMP).write_text(json.dumps(_wanted()))
    return NodeClients(root, seconds)


def codex_config(
    base_url: str, model: str, *, env_key: str = API_KEY_VARIABLE, websockets: bool = False
) -> str:
    """The text of a ``config.toml`` that has Codex use ``model`` at ``base_url`` (the
    server's URL ending in ``/v1``) over the Responses API, with the key read from the
    environment variable ``env_key``, and nothing reaching outside (:data:`OUTSIDE_OFF`);
    ``websockets``: over the API's WebSocket mode (:data:`WEBSOCKET_FEATURE` on, and the
    provider's ``supports_websockets``), not HTTPS."""
    outside = OUTSIDE_OFF
    if websockets:
        outside = outside.replace("[features]\n", f"[features]\n{WEBSOCKET_FEATURE} = true\n")
    return (
        f"model = {json.dumps(model)}\n"
        f'model_provider = "{PROVIDER}"\n'
        f"{outside}\n"
        f"[model_providers.{PROVIDER}]\n"
        'name = "openchatml"\n'
        f"base_url = {json.dumps(base_url)}\n"
        f"env_key = {json.dumps(env_key)}\n"
        'wire_api = "responses"\n' + ("supports_websockets = true\n" if websockets else "")
    )


@dataclass(frozen=True)
class CodexRun:
    """One finished ``codex`` command: its arguments, exit status and output."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    def error_lines(self) -> list[str]:
        """The lines Codex printed as ``ERROR: …`` (a request the server refused, a broken stream)."""
        return [line for line in (self.stdout + self.stderr).splitlines() if line.startswith("ERROR:")]

    def events(self) -> list[dict[str, object]]:
        """The JSON lines of a ``codex exec --json`` run (its other lines left out)."""
        found: list[dict[str, object]] = []
        for line in self.stdout.splitlines():
            if line.startswith("{"):
                event = json.loads(line)
                if isinstance(event, dict):
                    found.append(event)
        return found

    def __str__(self) -> str:
        return (
            f"codex {' '.join(self.args)} exited with {self.returncode}\n"
            f"--- stdout\n{self.stdout[-4000:]}\n--- stderr\n{self.stderr[-6000:]}"
        )


class CodexHome:
    """A ``CODEX_HOME`` whose ``config.toml`` points at a server, and a scratch folder to
    work in: ``exec`` and ``resume_last`` run Codex non-interactively there."""

    def __init__(
        self, clients: NodeClients, folder: Path, base_url: str, model: str, *, websockets: bool = False
    ) -> None:
        self.clients = clients
        self.home = folder / "codex-home"
        self.workdir = folder / "work"
        self.home.mkdir(parents=True, exist_ok=True)
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.home / "config.toml").write_text(codex_config(base_url, model, websockets=websockets))

    def env(self) -> dict[str, str]:
        """This environment with ``CODEX_HOME`` set, a dummy key, and no OpenAI settings
        that would steer Codex elsewhere."""
        drop = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY")
        env = {k: v for k, v in os.environ.items() if k not in drop}
        env.update(CODEX_HOME=str(self.home), NO_COLOR="1", RUST_LOG="error")
        env["PATH"] = os.pathsep.join([str(self.clients.sandbox_bin), env.get("PATH", "")])
        env[API_KEY_VARIABLE] = "dummy-key"
        return env

    def run(
        self, args: Sequence[str], *, timeout: float = 300.0, env: Mapping[str, str] | None = None
    ) -> CodexRun:
        """``codex ARGS`` in the scratch folder, with no standard input."""
        done = subprocess.run(
            [str(self.clients.codex), *args],
            cwd=self.workdir,
            env=dict(env) if env is not None else self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return CodexRun(tuple(args), done.returncode, done.stdout, done.stderr)

    def exec(self, prompt: str, *options: str, timeout: float = 300.0) -> CodexRun:
        """``codex exec --skip-git-repo-check --sandbox read-only [OPTIONS] PROMPT``: one turn."""
        return self.run(
            ["exec", "--skip-git-repo-check", "--sandbox", "read-only", *options, prompt], timeout=timeout
        )

    def resume_last(self, prompt: str, *options: str, timeout: float = 300.0) -> CodexRun:
        """``codex exec … resume --last PROMPT``: the next turn of the last session."""
        return self.run(
            ["exec", "--skip-git-repo-check", "--sandbox", "read-only", *options, "resume", "--last", prompt],
            timeout=timeout,
        )


def run_js(
    clients: NodeClients, script: str, args: Sequence[str], *, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """``node tests/clients/js/SCRIPT ARGS`` with the installed SDK on ``NODE_PATH``."""
    node = shutil.which("node")
    if node is None:
        raise NpmMissingError("the JavaScript SDK tests need node (Debian: apt-get install nodejs)")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["NODE_PATH"] = str(clients.node_modules)
    return subprocess.run(
        [node, str(JS_DIR / script), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
