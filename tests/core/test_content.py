"""System and developer contents rendered to prompt text. The expected texts are what
openai-harmony renders for the same contents (``test_differential`` holds the two to each
other on generated contents; these pin a few exactly)."""

from __future__ import annotations

import pytest

from openchatml import (
    ChannelConfig,
    DeveloperContent,
    ReasoningEffort,
    ResponseFormat,
    SystemContent,
    ToolDescription,
    ToolNamespaceConfig,
)
from openchatml.core.content import (
    BROWSER_NAMESPACE,
    DEFAULT_IDENTITY,
    PYTHON_NAMESPACE,
    rust_lines,
    tools_section,
)

CHANNELS_LINE = "# Valid channels: analysis, commentary, final. Channel must be included for every message."


def test_default_system_prompt() -> None:
    assert SystemContent().to_text() == (
        f"{DEFAULT_IDENTITY}\nKnowledge cutoff: 2024-06\n\nReasoning: medium\n\n{CHANNELS_LINE}"
    )


def test_system_prompt_lines_are_left_out_when_none() -> None:
    content = SystemContent(
        model_identity=None,
        reasoning_effort=ReasoningEffort.HIGH,
        conversation_start_date="2025-01-02",
        knowledge_cutoff=None,
        channel_config=ChannelConfig(("analysis", "final"), channel_required=False),
    )
    assert (
        content.to_text()
        == "Current date: 2025-01-02\n\nReasoning: high\n\n# Valid channels: analysis, final."
    )
    bare = SystemContent(None, None, None, None, None)
    assert bare.to_text() == ""
    assert SystemContent(None, None, None, None, ChannelConfig(())).to_text() == ""


def test_function_tools_add_the_commentary_note() -> None:
    note = "\nCalls to these tools must go to the commentary channel: 'functions'."
    assert SystemContent().to_text(has_function_tools=True) == SystemContent().to_text() + note
    # no channel line, no note
    assert "commentary channel" not in SystemContent(channel_config=None).to_text(has_function_tools=True)


def test_builtin_namespaces() -> None:
    assert ToolNamespaceConfig.browser() is BROWSER_NAMESPACE
    assert ToolNamespaceConfig.python() is PYTHON_NAMESPACE
    assert [t.name for t in BROWSER_NAMESPACE.tools] == ["search", "open", "find"]
    assert PYTHON_NAMESPACE.tools == ()
    # a namespace without tools shows its description as plain text, one with tools as comments
    python = SystemContent(
        reasoning_effort=None, channel_config=None, tools={"python": PYTHON_NAMESPACE}
    ).to_text()
    assert python.startswith(
        f"{DEFAULT_IDENTITY}\nKnowledge cutoff: 2024-06\n\n# Tools\n\n## python\n\nUse this tool"
    )
    browser = tools_section({"browser": BROWSER_NAMESPACE})
    assert browser.startswith("# Tools\n\n## browser\n\n// Tool for browsing.\n")
    assert (
        "type search = (_: {\nquery: string,\ntopn?: number, // default: 10\nsource?: string,\n}) => any;"
        in browser
    )
    assert browser.endswith("} // namespace browser")


ADD = ToolDescription(
    "add", "Add.", {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}
)
PING = ToolDescription("ping", "Ping.\nTwice.")


def test_developer_prompt() -> None:
    content = DeveloperContent(
        instructions="Be terse.",
        tools={"functions": ToolNamespaceConfig("functions", None, (PING, ADD))},
        response_formats=(
            ResponseFormat(
                "answer", {"type": "object", "properties": {"x": {"type": "integer"}}}, "The answer."
            ),
        ),
    )
    assert content.to_text() == (
        "# Instructions\n\nBe terse.\n\n"
        "# Tools\n\n## functions\n\nnamespace functions {\n\n"
        "// Ping.\n// Twice.\ntype ping = () => any;\n\n"
        "// Add.\ntype add = (_: {\na: number,\n}) => any;\n\n"
        "} // namespace functions\n\n"
        "# Response Formats\n\n## answer\n\n// The answer.\n"
        '{"type":"object","properties":{"x":{"type":"integer"}}}'
    )
    assert DeveloperContent().to_text() == ""
    assert DeveloperContent(instructions="").to_text() == "# Instructions\n\n"


def test_namespaces_are_sorted_by_name() -> None:
    tools = {
        "zeta": ToolNamespaceConfig("zeta", "Last."),
        "functions": ToolNamespaceConfig("functions", None, (PING,)),
        "alpha": ToolNamespaceConfig("alpha", "First.\nSecond line."),
    }
    text = tools_section(tools)
    assert text.index("## alpha") < text.index("## functions") < text.index("## zeta")
    assert "## alpha\n\nFirst.\nSecond line.\n\n## functions" in text


def test_function_tools() -> None:
    functions = ToolNamespaceConfig("functions", None, (PING, ADD))
    assert DeveloperContent(tools={"functions": functions}).function_tools == (PING, ADD)
    assert DeveloperContent(tools={"python": PYTHON_NAMESPACE}).function_tools == ()
    assert DeveloperContent().function_tools == ()


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", []),
        ("a", ["a"]),
        ("a\n", ["a"]),
        ("\n", [""]),
        ("a\n\nb", ["a", "", "b"]),
        ("a\r\nb\r\n", ["a", "b"]),
        ("a\rb", ["a\rb"]),
        ("a\n\n", ["a", ""]),
    ],
)
def test_rust_lines(text: str, lines: list[str]) -> None:
    assert rust_lines(text) == lines
