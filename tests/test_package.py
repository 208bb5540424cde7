"""The package as it ships: every folder of modules is a regular package (a wheel built
with ``packages.find`` leaves out folders without ``__init__.py``), its data files are
declared, and the layers import only downward."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from setuptools import find_packages

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "openchatml"

LAYERS = ["core", "templates", "engines", "tools", "training", "demo_models", "responses", "chat", "server"]
"""Bottom up; a layer may import the ones before it (engines, tools and demo_models sit side
by side — tools on the core alone —, and so do responses and chat, which may import responses)."""
ALLOWED = {
    "core": set(),
    "templates": {"core"},
    "engines": {"core", "templates"},
    "tools": {"core"},
    "training": {"core", "templates"},
    "demo_models": {"core", "templates", "engines", "training"},
    "responses": {"core", "templates", "engines", "tools"},
    "chat": {"core", "templates", "engines", "tools", "responses"},
    "server": {"core", "templates", "engines", "tools", "demo_models", "responses", "chat"},
}


def test_every_folder_of_modules_is_found_as_a_package() -> None:
    found = set(find_packages(str(SRC)))
    folders = {
        ".".join(path.parent.relative_to(SRC).parts)
        for path in PACKAGE.rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert folders <= found, sorted(folders - found)


def test_data_files_are_declared() -> None:
    config = tomllib.loads((SRC.parent / "pyproject.toml").read_text())
    declared = config["tool"]["setuptools"]["package-data"]
    for data in PACKAGE.rglob("*"):
        if data.is_file() and data.suffix not in {".py", ".pyc"} and "__pycache__" not in data.parts:
            package = ".".join(data.parent.relative_to(SRC).parts)
            owner = max((p for p in declared if package == p or package.startswith(p + ".")), key=len)
            relative = data.relative_to(SRC.joinpath(*owner.split(".")))
            assert any(relative.match(pattern) for pattern in declared[owner]), data


def _imported_layers(path: Path) -> set[str]:
    """The layers of ``openchatml`` that the module at ``path`` imports."""
    module = path.relative_to(SRC).with_suffix("").parts
    layers: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(module[: len(module) - node.level])
                target = [*base, *(node.module.split(".") if node.module else [])]
            else:
                target = (node.module or "").split(".")
            names = [target] if node.module else [[*target, alias.name] for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name.split(".") for alias in node.names]
        else:
            continue
        for name in names:
            if len(name) > 1 and name[0] == "openchatml" and name[1] in ALLOWED:
                layers.add(name[1])
    return layers


def test_layers_import_only_downward() -> None:
    wrong = []
    for layer, allowed in ALLOWED.items():
        for path in (PACKAGE / layer).rglob("*.py"):
            for used in _imported_layers(path) - allowed - {layer}:
                wrong.append(f"{path.relative_to(SRC)} imports {used}")
    assert not wrong, wrong
