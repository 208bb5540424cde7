"""A real llama.cpp ``llama-server`` for tests: built from source once, serving a GGUF.

``ensure_llama_server`` builds ``llama-server`` once into
``$OPENCHATML_HOME/llama.cpp/<version>/`` (default ``~/.cache/openchatml``). The source
is the llama.cpp tree vendored in the ``llama-cpp-python`` sdist (fetched with ``pip
download``, the ordinary client of the one index the tests may reach); only the
``llama-server`` target is built, CPU only, statically linked, without the web UI (the
server starts and answers the API without its assets, no flag needed). The converter's
part of the tree (``convert_hf_to_gguf.py``, ``conversion``, ``gguf-py``) is kept beside it.

``ensure_tiny_gguf`` converts a model folder (the tiny random-weight gpt-oss by default)
to GGUF once, with that converter and this interpreter (torch, transformers and numpy
are the test extra's), into a file next to the folder whose name carries a key of the
folder's stamp, the llama.cpp version and the output type. Weights stay unquantised
(``f32`` by default; gpt-oss checkpoints carry MXFP4 experts, which the converter repacks,
but the tiny model's are plain bf16 tensors, which it writes as they are with a warning).

``start_llama_server`` runs it on a port in its own process group, waits for
``GET /health`` and kills the group at exit; its log's tail is in every failure.

``OPENCHATML_TEST_LLAMACPP`` says whether the tests use it: ``1`` requires it (a failed
build fails the tests), ``0`` skips those tests, and unset tries: where it cannot be
built (no cmake or C++ compiler, no package index) they are skipped, with the reason in
the summary. A server that builds but does not start is always a failure.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from engine_process import free_port, kill_group, locked, openchatml_home, tail

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
"""The ``llama-cpp-python`` sdist whose ``vendor/llama.cpp`` is built."""
MODE = os.environ.get("OPENCHATML_TEST_LLAMACPP", "")
"""``1``: required; ``0``: off; anything else: used where it can be built."""

CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DGGML_NATIVE=OFF",
    "-DGGML_BACKEND_DL=OFF",
    "-DGGML_CCACHE=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
)
"""Portable (no ``-march=native``), CPU only, one static binary, no web UI, no downloads."""

SLOTS = 8
"""Parallel sequences (``-np``): the suite's concurrent requests, with room to spare."""
SLOT_CONTEXT = 4096
"""Context per slot: the tiny model's whole window."""
THREADS = 1
"""Threads per batch: llama.cpp's threads spin at barriers, so two of them on a two-core
machine that also runs pytest and ``openchatml serve`` decode several times slower than
one (measured on the tiny model: 6 against 32 tokens/s while a build ran beside)."""

_CONVERTER = ("convert_hf_to_gguf.py", "conversion", "gguf-py", "models/templates", "LICENSE")
"""What the GGUF converter needs of the tree, kept beside the binary (a few MB of its 180)."""
_STAMP = "openchatml-llama.json"
_RECIPE = 1
_SDIST = f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}"
_VENDORED = f"{_SDIST}/vendor/llama.cpp/"


class LlamaCppHarnessError(RuntimeError):
    """llama.cpp could not be built, a model converted or the server started; the message
    ends with the log's tail."""


class LlamaCppBuildError(LlamaCppHarnessError):
    """llama-server cannot be built here (no cmake, no compiler, no index, a failed build)."""


def llama_cpp_dir(home: Path | None = None) -> Path:
    """``<home>/llama.cpp/<version>``: the built binary (``bin/llama-server``) and the source (``src``)."""
    return (home if home is not None else openchatml_home()) / "llama.cpp" / LLAMA_CPP_PYTHON_VERSION


def _wanted() -> dict[str, Any]:
    return {"llama-cpp-python": LLAMA_CPP_PYTHON_VERSION, "cmake": list(CMAKE_FLAGS), "recipe": _RECIPE}


def _is_built(root: Path) -> bool:
    try:
        stamp = json.loads((root / _STAMP).read_text())
    except (OSError, ValueError):
        return False
    return stamp == _wanted() and (root / "bin" / "llama-server").exists() and (root / "src").is_dir()


def _clean_env() -> dict[str, str]:
    """This environment without what would steer a child Python or llama-server elsewhere."""
    drop = ("PYTHONPATH", "PYTHONHOME")
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("LLAMA_ARG_")}


def _run_logged(step: Sequence[str], log_path: Path, *, cwd: Path | None = None, env: dict[str, str]) -> None:
    with log_path.open("ab") as log:
        log.write(f"$ {' '.join(step)}\n".encode())
        log.flush()
        done = subprocess.run(step, stdout=log, stderr=subprocess.STDOUT, cwd=cwd, env=env, check=False)
    if done.returncode != 0:
        raise LlamaCppBuildError(
            f"{Path(step[0]).name} {' '.join(step[1:3])} … failed ({done.returncode}); {log_path}:\n"
            f"{tail(log_path)}"
        )


def _extract_vendored(archive: Path, target: Path) -> None:
    """Unpack ``vendor/llama.cpp`` of the sdist into ``target``."""
    with tarfile.open(archive) as tar:
        members = []
        for member in tar.getmembers():
            if member.name.startswith(_VENDORED) and len(member.name) > len(_VENDORED):
                member.name = member.name[len(_VENDORED) :]
                members.append(member)
        if not members:
            raise LlamaCppBuildError(f"{archive.name} holds no {_VENDORED}")
        tar.extractall(target, members=members, filter="data")


def _keep_converter(source: Path, target: Path) -> None:
    for name in _CONVERTER:
        path = source / name
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            shutil.copytree(path, target / name)
        else:
            shutil.copy2(path, target / name)


def ensure_llama_server(home: Path | None = None) -> Path:
    """The ``llama-server`` binary, built on first use; returns its path.

    Raises :class:`LlamaCppBuildError` when it cannot be built here (no cmake or C++
    compiler, ``pip download`` fails, the build fails), with the log's tail.
    """
    root = llama_cpp_dir(home)
    binary = root / "bin" / "llama-server"
    if _is_built(root):
        return binary
    cmake = shutil.which("cmake")
    compiler = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++") or shutil.which("clang++")
    if cmake is None or compiler is None:
        missing = " and ".join(n for n, p in (("cmake", cmake), ("a C++ compiler", compiler)) if p is None)
        raise LlamaCppBuildError(f"building llama-server needs {missing} (Debian: apt-get install cmake g++)")
    with locked(root.parent / f"{root.name}.lock"):
        if _is_built(root):
            return binary
        (root / _STAMP).unlink(missing_ok=True)
        root.mkdir(parents=True, exist_ok=True)
        log_path = root / "build.log"
        log_path.write_bytes(b"")
        env = _clean_env()
        env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=".build-", dir=root) as work:
            download = Path(work) / "download"
            _run_logged(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}",
                    "--no-deps",
                    "--no-binary",
                    ":all:",
                    "-d",
                    str(download),
                ],
                log_path,
                env=env,
            )
            archives = sorted(download.glob(f"{_SDIST}.tar.gz"))
            if not archives:
                raise LlamaCppBuildError(f"pip download left no {_SDIST}.tar.gz in {download}")
            source = Path(work) / "src"
            _extract_vendored(archives[0], source)
            build = Path(work) / "build"
            _run_logged([cmake, "-S", str(source), "-B", str(build), *CMAKE_FLAGS], log_path, env=env)
            jobs = str(os.cpu_count() or 2)
            _run_logged(
                [cmake, "--build", str(build), "--target", "llama-server", "-j", jobs], log_path, env=env
            )
            built = build / "bin" / "llama-server"
            if not built.exists():
                raise LlamaCppBuildError(f"the build left no {built}; {log_path}:\n{tail(log_path)}")
            shutil.rmtree(root / "src", ignore_errors=True)
            shutil.rmtree(root / "bin", ignore_errors=True)
            (root / "bin").mkdir()
            shutil.copy2(built, binary)
            _keep_converter(source, root / "src")
        with log_path.open("a") as log:
            log.write(f"built in {time.monotonic() - started:.0f} s\n")
        (root / _STAMP).write_text(json.dumps(_wanted()))
    return binary


def _folder_key(model_dir: Path) -> str:
    """A key of the model folder's content: its stamp file where it has one (the tiny
    models do), else every file's name, size and modification time."""
    digest = hashlib.sha256()
    stamps = sorted(model_dir.glob("openchatml-*.json"))
    if stamps:
        for stamp in stamps:
            digest.update(stamp.name.encode() + b"\0" + stamp.read_bytes())
    else:
        for path in sorted(p for p in model_dir.rglob("*") if p.is_file()):
            info = path.stat()
            digest.update(f"{path.relative_to(model_dir)}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def gguf_path(model_dir: Path, outtype: str = "f32") -> Path:
    """Where :func:`ensure_tiny_gguf` keeps the GGUF of ``model_dir``: next to it, named
    after it and a key of its content, the llama.cpp version and ``outtype``."""
    key = hashlib.sha256(
        f"{_folder_key(model_dir)}\0{LLAMA_CPP_PYTHON_VERSION}\0{outtype}".encode()
    ).hexdigest()[:12]
    return model_dir.parent / f"{model_dir.name}.{key}.{outtype}.gguf"


def ensure_tiny_gguf(
    model_dir: Path | None = None, *, outtype: str = "f32", home: Path | None = None
) -> Path:
    """``model_dir`` (default: the tiny gpt-oss) as GGUF, converted once; returns its path.

    ``outtype`` is one of the converter's unquantised types (``f32``, ``f16``, ``bf16``).
    Raises :class:`LlamaCppBuildError` when llama.cpp cannot be built, and
    :class:`LlamaCppHarnessError` (with the converter's output) when conversion fails.
    """
    if model_dir is None:
        from openchatml.demo_models.tiny_random import ensure_tiny_model

        model_dir = ensure_tiny_model()
    target = gguf_path(model_dir, outtype)
    if target.exists():
        return target
    source = ensure_llama_server(home).parents[1] / "src"
    with locked(target.with_name(target.name + ".lock")):
        if target.exists():
            return target
        partial = target.with_name(f".{target.name}.partial")
        log_path = target.with_name(target.name + ".log")
        env = _clean_env()
        env["PYTHONPATH"] = str(source / "gguf-py")  # the tree's gguf, not any installed one
        command = [
            sys.executable,
            str(source / "convert_hf_to_gguf.py"),
            str(model_dir),
            "--outtype",
            outtype,
            "--outfile",
            str(partial),
        ]
        with log_path.open("wb") as log:
            done = subprocess.run(
                command, stdout=log, stderr=subprocess.STDOUT, cwd=source, env=env, check=False
            )
        if done.returncode != 0 or not partial.exists():
            partial.unlink(missing_ok=True)
            raise LlamaCppHarnessError(
                f"convert_hf_to_gguf.py {model_dir} failed ({done.returncode}); {log_path}:\n{tail(log_path)}"
            )
        partial.rename(target)
        for stale in target.parent.glob(f"{model_dir.name}.*.{outtype}.gguf"):
            if stale != target and len(stale.name) == len(target.name):  # an older key's
                stale.unlink(missing_ok=True)
    return target


@dataclass
class LlamaServer:
    """A running ``llama-server``: its URL, process, log and how long it took to be healthy."""

    base_url: str
    port: int
    gguf: Path
    alias: str
    slots: int
    log_path: Path
    process: subprocess.Popen[bytes]
    startup_seconds: float

    def log_tail(self, lines: int = 60) -> str:
        """The last ``lines`` lines of the server log."""
        return tail(self.log_path, lines)


@contextlib.contextmanager
def start_llama_server(
    gguf: Path,
    port: int,
    *,
    binary: Path | None = None,
    log_path: Path | None = None,
    alias: str = "tiny-gpt-oss",
    slots: int = SLOTS,
    slot_context: int = SLOT_CONTEXT,
    timeout: float = 120.0,
    extra_args: Sequence[str] = (),
) -> Iterator[LlamaServer]:
    """Serve ``gguf`` with llama-server on 127.0.0.1:``port`` until the block ends.

    ``slots`` parallel sequences of ``slot_context`` tokens each; ``/metrics`` and
    ``/slots`` on; the model listed as ``alias``. Waits for ``GET /health``; raises
    :class:`LlamaCppHarnessError` with the log's tail if the server dies or is not healthy
    within ``timeout`` seconds. The whole process group is killed at exit.
    """
    binary = binary if binary is not None else ensure_llama_server()
    log_path = log_path if log_path is not None else binary.parents[1] / f"llama-server-{port}.log"
    command = [
        str(binary),
        "--model",
        str(gguf),
        "--alias",
        alias,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--parallel",
        str(slots),
        "--ctx-size",
        str(slots * slot_context),
        "--threads",
        str(THREADS),
        "--threads-batch",
        str(THREADS),
        "--metrics",
        "--slots",
        "--no-webui",
        "--no-warmup",
        *extra_args,
    ]
    base_url = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=_clean_env(), start_new_session=True
        )
    try:
        while True:
            if process.poll() is not None:
                raise LlamaCppHarnessError(
                    f"llama-server exited with {process.returncode}; {log_path}:\n{tail(log_path)}"
                )
            if time.monotonic() - started > timeout:
                raise LlamaCppHarnessError(
                    f"llama-server not healthy after {timeout:.0f} s; {log_path}:\n{tail(log_path)}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base_url}/health", timeout=2.0).status_code == 200:
                    break
            time.sleep(0.2)
        yield LlamaServer(
            base_url, port, Path(gguf), alias, slots, log_path, process, time.monotonic() - started
        )
    finally:
        kill_group(process, 10.0)


def serving_for_tests(tmp_path_factory: Any, model_dir: Path | None = None) -> Iterator[LlamaServer]:
    """llama-server serving ``model_dir`` (default: the tiny gpt-oss) until the generator is
    closed, or a skip, by the rules of ``OPENCHATML_TEST_LLAMACPP`` (required, off, or used
    where it builds)."""
    import pytest

    if MODE == "0":
        pytest.skip("real-llama.cpp tests are off (OPENCHATML_TEST_LLAMACPP=0)")
    started = time.monotonic()
    try:
        binary = ensure_llama_server()
    except LlamaCppBuildError as exc:
        if MODE == "1":
            raise
        pytest.skip(
            f"llama-server cannot be built here (OPENCHATML_TEST_LLAMACPP=1 makes this an error): {exc}"
        )
    gguf = ensure_tiny_gguf(model_dir)
    ready = time.monotonic() - started
    log_path = tmp_path_factory.mktemp("llamacpp") / "llama-server.log"
    with start_llama_server(gguf, free_port(), binary=binary, log_path=log_path) as server:
        print(
            f"\nllama-server ({gguf.name}) healthy after {server.startup_seconds:.1f} s"
            f" (build and conversion, cached or not: {ready:.1f} s)",
            file=sys.stderr,
        )
        yield server
