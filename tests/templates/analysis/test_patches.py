"""Data patches: keyed by real templates' text, applied after the analysis, each field
override set by its dotted path."""

from __future__ import annotations

import pytest
from analysed_templates import TEMPLATE_NAMES, fmt_of
from data_paths import TEMPLATES

from openchatml.templates.analysis.patches import PATCHES, Patch, apply_patches, source_digest
from openchatml.templates.format import ContentMode, ReasoningMode, TemplateFormat, ToolSyntax

needs_templates = pytest.mark.skipif(not TEMPLATES.is_dir(), reason="the shared templates are not here")


@needs_templates
def test_patches_are_keyed_by_real_templates() -> None:
    by_digest = {source_digest((TEMPLATES / n).read_text(encoding="utf-8")): n for n in TEMPLATE_NAMES}
    for digest, patch in PATCHES.items():
        assert by_digest.get(digest, "").removesuffix(".jinja") == patch.name
        assert patch.why
        assert patch.name in fmt_of(by_digest[digest]).patches


@needs_templates
def test_a_patch_overrides_fields_and_is_recorded() -> None:
    name = "ibm-granite-granite-3.3-2B-Instruct.jinja"
    fmt = fmt_of(name)
    assert fmt.patches == ("ibm-granite-granite-3.3-2B-Instruct",)
    assert fmt.content.mode is ContentMode.WRAPPED_WITH_REASONING
    assert (fmt.content.start, fmt.content.end) == ("<response>", "</response>")
    assert "<think>" in fmt.preserved_tokens and "<response>" in fmt.preserved_tokens
    assert apply_patches(TemplateFormat(name="x"), "no template") == TemplateFormat(name="x")


def test_overrides_set_nested_fields_enums_and_tuples(monkeypatch: pytest.MonkeyPatch) -> None:
    source = "{{ messages }}"
    patch = Patch(
        "made-up",
        "for the test",
        {
            "reasoning.mode": "tags",
            "reasoning.start": "<t>",
            "tools.syntax": "pythonic",
            "end_markers": ["<e>"],
        },
    )
    monkeypatch.setitem(PATCHES, source_digest(source), patch)
    fmt = apply_patches(TemplateFormat(name="x", patches=("earlier",)), source)
    assert fmt.reasoning.mode is ReasoningMode.TAGS and fmt.reasoning.start == "<t>"
    assert fmt.tools.syntax is ToolSyntax.PYTHONIC
    assert fmt.end_markers == ("<e>",)
    assert fmt.patches == ("earlier", "made-up")


def test_the_digest_is_the_sha256_of_the_text() -> None:
    assert source_digest("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert source_digest("é") != source_digest("e")
