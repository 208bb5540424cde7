"""The ``openchatml`` command: render, parse, validate, convert; exit codes and messages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from openchatml import (
    Conversation,
    CoTPolicy,
    DeveloperContent,
    Message,
    Profile,
    RenderConfig,
    Renderer,
    Role,
    SystemContent,
    TextContent,
    TranscriptHeaderError,
    load_encoding,
    parse_transcript,
)
from openchatml.cli import main
from openchatml.core.interchange import conversation_from_json, conversation_to_json
from openchatml.core.tokens import START_ID

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "weather.json"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def run(runner: CliRunner, *args: str, input: str | bytes | None = None) -> Result:
    return runner.invoke(main, list(args), input=input)


def example() -> Conversation:
    return conversation_from_json(json.loads(EXAMPLE.read_text(encoding="utf-8")))


def as_text(conversation: Conversation) -> Conversation:
    """``conversation`` with structured contents replaced by the text they render to."""
    tools = conversation.has_function_tools
    out = []
    for message in conversation:
        parts: list[str] = []
        for part in message.content:
            if isinstance(part, SystemContent):
                parts.append(part.to_text(has_function_tools=tools))
            elif isinstance(part, DeveloperContent):
                parts.append(part.to_text())
            else:
                parts.append(part.text)
        out.append(message.with_(content=(TextContent("".join(parts)),)))
    return Conversation(tuple(out), conversation.header)


def write(tmp_path: Path, name: str, data: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return str(path)


def assert_failed(result: Result, code: int = 1) -> None:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)


# --- the example file -------------------------------------------------------------------


def test_example_file_is_canonical_json() -> None:
    raw = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    conv = conversation_from_json(raw)
    assert conversation_to_json(conv) == raw
    roles = [(m.role, m.channel) for m in conv]
    assert roles == [
        (Role.SYSTEM, None),
        (Role.DEVELOPER, None),
        (Role.USER, None),
        (Role.ASSISTANT, "analysis"),
        (Role.ASSISTANT, "commentary"),
        (Role.TOOL, "commentary"),
        (Role.ASSISTANT, "final"),
    ]
    assert isinstance(conv[0].content[0], SystemContent)
    developer = conv[1].content[0]
    assert isinstance(developer, DeveloperContent) and developer.instructions
    (tool,) = developer.function_tools
    params = tool.parameters
    assert params is not None
    assert params["required"] == ["location"]
    props = params["properties"]
    assert props["location"]["type"] == "string"
    assert props["format"]["enum"] == ["celsius", "fahrenheit"] and props["format"]["default"] == "celsius"
    assert props["days"]["type"] == "number" and "days" not in params["required"]
    call, reply = conv[4], conv[5]
    assert call.is_tool_call and call.call_id == reply.call_id == "call_wx1"
    assert reply.name == call.recipient == "functions.get_current_weather"


def test_json_format_doc_shows_the_example() -> None:
    doc = (EXAMPLE.parents[1] / "docs" / "json-format.md").read_text(encoding="utf-8")
    section = doc.split("## A complete example", 1)[1]
    block = section.split("```json\n", 1)[1].split("```", 1)[0]
    assert json.loads(block) == json.loads(EXAMPLE.read_text(encoding="utf-8"))


@pytest.mark.parametrize("profile", ["ocm", "harmony"])
def test_example_round_trip_through_text(runner: CliRunner, profile: str) -> None:
    rendered = run(runner, "render", str(EXAMPLE), "--format", "text", "--profile", profile, "--cot", "keep")
    assert rendered.exit_code == 0, rendered.output
    parsed = run(runner, "parse", "-", input=rendered.stdout)
    assert parsed.exit_code == 0, parsed.output
    expected = as_text(example())
    if profile == "harmony":  # Harmony has no call_id
        expected = Conversation(tuple(m.with_(call_id=None) for m in expected))
    assert json.loads(parsed.stdout) == conversation_to_json(expected)


def test_example_round_trip_through_tokens(runner: CliRunner) -> None:
    rendered = run(runner, "render", str(EXAMPLE), "--format", "tokens", "--profile", "ocm", "--cot", "keep")
    parsed = run(runner, "parse", "--tokens", "-", input=rendered.stdout)
    assert parsed.exit_code == 0, parsed.output
    assert json.loads(parsed.stdout) == conversation_to_json(as_text(example()))


# --- render -----------------------------------------------------------------------------


def test_render_text_defaults(runner: CliRunner) -> None:
    result = run(runner, "render", str(EXAMPLE))
    assert result.exit_code == 0
    expected = Renderer(RenderConfig()).text(example())
    assert result.stdout == expected + "\n"
    assert "<|channel|>analysis" not in result.stdout  # the finished turn's CoT is dropped
    assert "call_id=" not in result.stdout


def test_render_tokens_one_line(runner: CliRunner) -> None:
    result = run(runner, "render", str(EXAMPLE), "--format", "tokens")
    assert result.exit_code == 0
    assert result.stdout.count("\n") == 1
    assert json.loads(result.stdout) == Renderer(RenderConfig()).tokens(example())


@pytest.mark.parametrize("cot", ["drop_finished", "auto_drop", "keep"])
@pytest.mark.parametrize("profile", ["harmony", "ocm"])
def test_render_profile_and_cot(runner: CliRunner, profile: str, cot: str) -> None:
    result = run(runner, "render", str(EXAMPLE), "--profile", profile, "--cot", cot)
    config = RenderConfig(profile=Profile(profile), cot=CoTPolicy(cot))
    assert result.stdout == Renderer(config).text(example()) + "\n"
    assert ("<|channel|>analysis" in result.stdout) == (cot == "keep")
    assert ("call_id=call_wx1" in result.stdout) == (profile == "ocm")


def test_render_for_completion(runner: CliRunner) -> None:
    text = run(runner, "render", str(EXAMPLE), "--for", "completion")
    assert text.stdout.endswith("<|end|><|start|>assistant\n")
    user = run(
        runner, "render", str(EXAMPLE), "--for", "completion", "--next-role", "user", "--format", "tokens"
    )
    ids = json.loads(user.stdout)
    assert ids == Renderer().completion_tokens(example(), Role.USER)
    assert ids[-2:] == [START_ID, *load_encoding().encode_ordinary("user")]


def test_render_for_training(runner: CliRunner) -> None:
    text = run(runner, "render", str(EXAMPLE), "--for", "training")
    assert text.stdout.endswith("58% humidity.<|return|>\n")
    tokens = run(runner, "render", str(EXAMPLE), "--for", "training", "--format", "tokens")
    assert json.loads(tokens.stdout) == Renderer().training_tokens(example())
    history = run(runner, "render", str(EXAMPLE), "--for", "history", "--format", "tokens")
    assert json.loads(history.stdout)[:-1] == json.loads(tokens.stdout)[:-1]


def test_render_from_stdin(runner: CliRunner) -> None:
    doc = {
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "channel": "final", "content": "Yo"},
        ]
    }
    result = run(runner, "render", "-", "--profile", "ocm", input=json.dumps(doc))
    assert result.stdout == (
        "<|start|>user<|message|>Hi<|end|>\n<|start|>assistant<|channel|>final<|message|>Yo<|end|>\n"
    )
    bare = run(runner, "render", "-", input=json.dumps(doc["messages"]))
    assert (
        bare.stdout
        == "<|start|>user<|message|>Hi<|end|><|start|>assistant<|channel|>final<|message|>Yo<|end|>\n"
    )


def test_render_writes_the_transcript_header(runner: CliRunner) -> None:
    doc = {
        "header": {"version": "2.2", "model": "gpt-oss-20b"},
        "messages": [{"role": "user", "content": "Hi"}],
    }
    result = run(runner, "render", "-", "--profile", "ocm", input=json.dumps(doc))
    header, body = result.stdout.split("<|start|>", 1)
    assert "version: '2.2'" in header and "model: gpt-oss-20b" in header
    assert body == "user<|message|>Hi<|end|>\n"
    back = run(runner, "parse", "-", input=result.stdout)
    assert json.loads(back.stdout) == doc


def test_rendered_transcript_header_is_block_yaml(runner: CliRunner) -> None:
    doc = {
        "header": {"version": "2.2", "model": "gpt-oss-20b"},
        "messages": [{"role": "user", "content": "Hi"}],
    }
    result = run(runner, "render", "-", "--profile", "ocm", input=json.dumps(doc))
    first, second = result.stdout.splitlines()[:2]
    assert first.startswith("version: ") and "2.2" in first
    assert second == "model: gpt-oss-20b"


def test_render_bad_json(runner: CliRunner) -> None:
    result = run(runner, "render", "-", input='{"messages": [\n  {"role": "user",}]}')
    assert_failed(result)
    assert result.stderr == (
        "error: E-INTERCHANGE: $: not valid JSON: Expecting property name enclosed in double quotes "
        "(at line 2, column 19)\n"
    )
    assert result.stdout == ""


def test_render_interchange_error_names_the_path(runner: CliRunner) -> None:
    doc = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_call": {"recipient": "f"}},
        ]
    }
    result = run(runner, "render", "-", input=json.dumps(doc))
    assert_failed(result)
    assert (
        result.stderr
        == "error: E-INTERCHANGE: messages[1].tool_call.arguments: missing (expected a string)\n"
    )


def test_render_refuses_text(runner: CliRunner) -> None:
    result = run(runner, "render", "-", input="<|start|>user<|message|>hi<|end|>")
    assert_failed(result)
    assert result.stderr.startswith(
        "error: E-INTERCHANGE: $: expected a JSON conversation, not Harmony/OCM text"
    )


@pytest.mark.parametrize(
    "args",
    [
        ["render", "missing.json"],
        ["render", str(EXAMPLE), "--format", "yaml"],
        ["render", str(EXAMPLE), "--profile", "chatml"],
        ["render", str(EXAMPLE), "--cot", "never"],
        ["render", str(EXAMPLE), "--next-role", "user"],
        ["render", str(EXAMPLE), "--for", "completion", "--next-role", "robot"],
        ["render"],
        ["parse"],
        ["parse", "-", "--role", "robot"],
        ["validate"],
        ["convert", str(EXAMPLE)],
        ["convert", str(EXAMPLE), "--to", "xml"],
        ["frobnicate"],
    ],
)
def test_usage_errors_exit_2(runner: CliRunner, args: list[str]) -> None:
    result = run(runner, *args, input="")
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output


def test_help_and_version(runner: CliRunner) -> None:
    result = run(runner, "--help")
    assert result.exit_code == 0
    for command in ("render", "parse", "validate", "convert"):
        assert command in result.stdout
        assert run(runner, command, "--help").exit_code == 0
    assert "0.1.0" in run(runner, "--version").stdout


# --- parse ------------------------------------------------------------------------------

CHAT = (
    "<|start|>user<|message|>What is 2 + 2?<|end|>\n"
    "<|start|>assistant<|channel|>analysis<|message|>Simple arithmetic.<|end|>\n"
    "<|start|>assistant<|channel|>final<|message|>4.<|return|>"
)
CHAT_JSON = {
    "messages": [
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "channel": "analysis", "thinking": "Simple arithmetic."},
        {"role": "assistant", "channel": "final", "content": "4."},
    ]
}


def test_parse_text(runner: CliRunner, tmp_path: Path) -> None:
    result = run(runner, "parse", write(tmp_path, "chat.txt", CHAT))
    assert result.exit_code == 0
    assert json.loads(result.stdout) == CHAT_JSON
    assert result.stdout.startswith('{\n  "messages": [\n')


def test_parse_compact(runner: CliRunner) -> None:
    result = run(runner, "parse", "-", "--compact", input=CHAT)
    assert result.stdout == json.dumps(CHAT_JSON, separators=(",", ":")) + "\n"


def test_parse_keeps_bytes_exactly(runner: CliRunner) -> None:
    result = run(runner, "parse", "-", "--compact", input="<|start|>user<|message|>a\r\nb ☃<|end|>".encode())
    assert json.loads(result.stdout)["messages"][0]["content"] == "a\r\nb ☃"


def test_parse_tokens_json_and_whitespace(runner: CliRunner) -> None:
    ids = Renderer(RenderConfig(cot=CoTPolicy.KEEP)).tokens(conversation_from_json(CHAT_JSON))
    as_json = run(runner, "parse", "--tokens", "-", input=json.dumps(ids))
    as_words = run(
        runner,
        "parse",
        "--tokens",
        "-",
        input="\n".join(" ".join(map(str, ids[i : i + 7])) for i in range(0, len(ids), 7)),
    )
    assert as_json.exit_code == as_words.exit_code == 0
    assert json.loads(as_json.stdout) == json.loads(as_words.stdout) == CHAT_JSON


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("[200006, 1.5]", "error: E-PARSE: token input: expected an integer, not 1.5 (at token 1)\n"),
        ("[200006, true]", "error: E-PARSE: token input: expected an integer, not True (at token 1)\n"),
        ("200006 12 x7", "error: E-PARSE: token input: expected an integer, not 'x7' (at token 2)\n"),
        ("{}", "error: E-PARSE: token input: expected an integer, not '{}' (at token 0)\n"),
        ("200006 \u0663", "error: E-PARSE: token input: expected an integer, not '\u0663' (at token 1)\n"),
        (
            "[1, 2",
            "error: E-PARSE: token input is not a JSON array of integers: Expecting ',' delimiter: "
            "line 1 column 6 (char 5)\n",
        ),
    ],
)
def test_parse_bad_token_input(runner: CliRunner, data: str, message: str) -> None:
    result = run(runner, "parse", "--tokens", "-", input=data)
    assert_failed(result)
    assert result.stderr == message


def test_parse_token_errors_name_the_token(runner: CliRunner) -> None:
    result = run(runner, "parse", "--tokens", "-", input="[200006, 1428, 200008, 3030]")
    assert_failed(result)
    assert result.stderr == "error: E-STREAM-TRUNCATED: input ended inside a message body (at token 3)\n"
    outside = run(runner, "parse", "--tokens", "-", input="[300000]")
    assert (
        outside.stderr
        == "error: E-PARSE-UNEXPECTED-TOKEN: token id 300000 is outside o200k_harmony (at token 0)\n"
    )


def test_parse_role_for_a_completion(runner: CliRunner) -> None:
    completion = "<|channel|>final<|message|>Hello!<|return|>"
    result = run(runner, "parse", "-", "--role", "assistant", "--compact", input=completion)
    assert json.loads(result.stdout) == {
        "messages": [{"role": "assistant", "channel": "final", "content": "Hello!"}]
    }
    ids = load_encoding().encode(completion, allowed_special="all")
    tokens = run(runner, "parse", "-", "--tokens", "--role", "assistant", input=json.dumps(ids))
    assert json.loads(tokens.stdout) == json.loads(result.stdout)
    without = run(runner, "parse", "-", input=completion)
    assert_failed(without)
    assert without.stderr.startswith("error: E-PARSE-UNEXPECTED-TOKEN: <|channel|> without <|start|>")


BROKEN = (
    "<|start|>user<|message|>Hi<|end|>\n"
    "<|start|>assistant<|message|>Hello<|end|>\n"
    "oops\n"
    "<|start|>assistant to=functions.f<|channel|>commentary<|constrain|>json<|message|>{bad<|call|>\n"
    "<|start|>assistant<|channel|>final<|message|>cut"
)


def test_parse_strict_stops_at_the_first_error(runner: CliRunner) -> None:
    result = run(runner, "parse", "-", input=BROKEN)
    assert_failed(result)
    assert result.stdout == ""
    assert result.stderr == "error: E-PARSE-UNEXPECTED-TOKEN: text between messages (at line 3, column 1)\n"


def test_parse_lenient_reports_repairs(runner: CliRunner) -> None:
    result = run(runner, "parse", "-", "--lenient", "--compact", input=BROKEN)
    assert result.exit_code == 0
    assert [json.loads(result.stdout)["messages"][i].get("content") for i in (0, 1, 3)] == [
        "Hi",
        "Hello",
        "cut",
    ]
    assert result.stderr.splitlines() == [
        "warning: E-PARSE-UNEXPECTED-TOKEN: dropped 'oops' between messages (at line 3, column 1)",
        "warning: E-BODY-CONSTRAINT-VIOLATION: body is not the JSON its <|constrain|>json declares: "
        "Expecting property name enclosed in double quotes: line 1 column 2 (char 1) (at line 4, column 87)",
        "warning: E-STREAM-TRUNCATED: input ended inside a message body (at line 5, column 49)",
    ]


def test_parse_profile_harmony_requires_channels(runner: CliRunner) -> None:
    text = "<|start|>assistant<|message|>Hello<|end|>"
    assert run(runner, "parse", "-", input=text).exit_code == 0
    result = run(runner, "parse", "-", "--profile", "harmony", input=text)
    assert_failed(result)
    assert (
        result.stderr
        == "error: E-PARSE-CHANNEL-MISSING: assistant message without a channel (at line 1, column 19)\n"
    )


def test_parse_stream_text(runner: CliRunner) -> None:
    text = (
        "<|start|>user<|message|>two\nlines<|end|>\n<|start|>assistant<|channel|>final<|message|>ok<|return|>"
    )
    result = run(runner, "parse", "-", "--stream", input=text)
    assert result.exit_code == 0
    assert [json.loads(line) for line in result.stdout.splitlines()] == [
        {"type": "message_started", "index": 0, "header": {"role": "user"}},
        {"type": "content_delta", "index": 0, "channel": None, "text": "two\n"},
        {"type": "content_delta", "index": 0, "channel": None, "text": "lines"},
        {
            "type": "message_done",
            "index": 0,
            "message": {"role": "user", "content": "two\nlines"},
            "terminator": "<|end|>",
        },
        {"type": "message_started", "index": 1, "header": {"role": "assistant", "channel": "final"}},
        {"type": "content_delta", "index": 1, "channel": "final", "text": "ok"},
        {
            "type": "message_done",
            "index": 1,
            "message": {"role": "assistant", "channel": "final", "content": "ok"},
            "terminator": "<|return|>",
        },
    ]


def test_parse_stream_tokens_one_event_batch_per_token(runner: CliRunner) -> None:
    enc = load_encoding()
    ids = Renderer().tokens([Message.user("hello there world")])
    body = ids[3:-1]
    assert len(body) == 3
    result = run(runner, "parse", "-", "--stream", "--tokens", input=json.dumps(ids))
    events = [json.loads(line) for line in result.stdout.splitlines()]
    deltas = [e["text"] for e in events if e["type"] == "content_delta"]
    assert deltas == [enc.decode([t]) for t in body]
    assert events[-1]["type"] == "message_done"


def test_parse_stream_bad_token(runner: CliRunner) -> None:
    result = run(runner, "parse", "-", "--stream", "--tokens", input="200006 1428\n200008 x 3030")
    assert_failed(result)
    assert [json.loads(line)["type"] for line in result.stdout.splitlines()] == ["message_started"]
    assert result.stderr == "error: E-PARSE: token input: expected an integer, not 'x' (at token 3)\n"


def test_make_run_pipeline_in_real_processes() -> None:
    command = [sys.executable, "-c", "from openchatml.cli import main; main()"]
    rendered = subprocess.run(
        [*command, "render", str(EXAMPLE), "--format", "text"], capture_output=True, check=True
    )
    parsed = subprocess.run(
        [*command, "parse", "-", "--profile", "harmony"],
        input=rendered.stdout,
        capture_output=True,
        check=True,
    )
    expected = as_text(example())
    kept = [m.with_(call_id=None) for m in expected if m.channel != "analysis"]
    assert json.loads(parsed.stdout) == conversation_to_json(kept)


def test_parse_stream_lenient_and_strict(runner: CliRunner) -> None:
    lenient = run(runner, "parse", "-", "--stream", "--lenient", input="<|start|>user<|message|>cut")
    events = [json.loads(line) for line in lenient.stdout.splitlines()]
    assert [e["type"] for e in events] == ["message_started", "content_delta", "repaired", "message_done"]
    assert events[2]["code"] == "E-STREAM-TRUNCATED"
    assert events[2]["position"] == {"offset": 27, "unit": "char", "line": 1, "column": 28}
    assert events[3]["terminator"] is None
    strict = run(runner, "parse", "-", "--stream", input="<|start|>user<|message|>cut")
    assert_failed(strict)
    assert [json.loads(line)["type"] for line in strict.stdout.splitlines()] == [
        "message_started",
        "content_delta",
    ]
    assert (
        strict.stderr
        == "error: E-STREAM-TRUNCATED: input ended inside a message body (at line 1, column 28)\n"
    )


def test_parse_not_utf8(runner: CliRunner) -> None:
    result = run(runner, "parse", "-", input=b"<|start|>user<|message|>h\n\xffi<|end|>")
    assert_failed(result)
    assert result.stderr == "error: E-PARSE: input is not UTF-8 (byte 26) (at line 2, column 1)\n"
    streamed = run(runner, "parse", "-", "--stream", input=b"<|start|>user<|message|>h\n\xffi<|end|>")
    assert_failed(streamed)
    assert streamed.stderr == "error: E-PARSE: input is not UTF-8 (byte 26)\n"


def test_parse_yaml_header(runner: CliRunner) -> None:
    text = "version: 2.2\nmodel: gpt-oss-120b\n<|start|>user<|message|>hi<|end|>"
    result = run(runner, "parse", "-", input=text)
    assert json.loads(result.stdout) == {
        "header": {"version": "2.2", "model": "gpt-oss-120b"},
        "messages": [{"role": "user", "content": "hi"}],
    }


def test_strict_yaml_header_error_has_a_position() -> None:
    text = "version: [\n<|start|>user<|message|>hi<|end|>"
    with pytest.raises(TranscriptHeaderError) as info:
        parse_transcript(text)
    assert info.value.position is not None


# --- validate ---------------------------------------------------------------------------


def test_validate_good_inputs(runner: CliRunner, tmp_path: Path) -> None:
    conv = example()
    text = write(tmp_path, "good.txt", Renderer(RenderConfig(profile=Profile.OCM)).text(conv))
    ids = Renderer().tokens(conv)
    tokens = write(tmp_path, "good.tokens", json.dumps(ids))
    words = write(tmp_path, "good.ids", " ".join(map(str, ids)))
    result = run(runner, "validate", text, tokens, words, str(EXAMPLE), "--profile", "harmony")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [f"{text}: ok", f"{tokens}: ok", f"{words}: ok", f"{EXAMPLE}: ok"]


def test_validate_reports_every_problem(runner: CliRunner, tmp_path: Path) -> None:
    bad = write(tmp_path, "bad.txt", BROKEN)
    result = run(runner, "validate", bad)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{bad}:1:1: E-PARSE-DOCUMENT-HEADER the transcript does not begin with its YAML header "
        "(OCM §2: version: 2.2)",
        f"{bad}:3:1: E-PARSE-UNEXPECTED-TOKEN dropped 'oops' between messages",
        f"{bad}:4:72: E-PARSE-HEADER tool call to functions.f without call_id (OCM §8.2); "
        "given call_id=call-1",
        f"{bad}:4:87: E-BODY-CONSTRAINT-VIOLATION body is not the JSON its <|constrain|>json declares: "
        "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        f"{bad}:5:49: E-STREAM-TRUNCATED input ended inside a message body",
    ]
    harmony = run(runner, "validate", bad, "--profile", "harmony")
    assert (
        harmony.stdout.splitlines()[0]
        == f"{bad}:2:19: E-PARSE-CHANNEL-MISSING assistant message without a channel"
    )
    assert len(harmony.stdout.splitlines()) == 4


def test_validate_header_problems(runner: CliRunner) -> None:
    result = run(runner, "validate", "-", input="version: 2.2\n<|start|>user bogus=1<|message|>hi<|end|>")
    assert result.exit_code == 1
    assert result.stdout == "-:2:22: E-PARSE-HEADER unknown header attribute 'bogus'\n"
    yaml = run(runner, "validate", "-", input="version: [\n<|start|>user<|message|>hi<|end|>")
    assert yaml.stdout.startswith("-:2:1: E-PARSE-DOCUMENT-HEADER the transcript header is not YAML: ")
    assert yaml.stdout.count("\n") == 1


def test_validate_tokens(runner: CliRunner, tmp_path: Path) -> None:
    bad = write(
        tmp_path, "bad.tokens", "[200006, 1428, 200008, 3030, 200007, 200005, 200006, 173781, 200008, 3030]"
    )
    result = run(runner, "validate", bad)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{bad}:token 5: E-PARSE-UNEXPECTED-TOKEN <|channel|> without <|start|>",
        f"{bad}:token 6: E-PARSE-HEADER <|start|> inside a message header",
        f"{bad}:token 9: E-STREAM-TRUNCATED input ended inside a message body",
    ]


def test_validate_json(runner: CliRunner) -> None:
    tool = run(runner, "validate", "-", input='{"messages": [{"role": "tool", "content": "x"}]}')
    assert tool.exit_code == 1
    assert (
        tool.stdout
        == "-: E-INTERCHANGE messages[0].name: a tool message needs the tool's name (functions.get_weather)\n"
    )
    syntax = run(runner, "validate", "-", input='{"messages": [\n{"role": "tool",}]}')
    assert (
        syntax.stdout
        == "-:2:17: E-INTERCHANGE $: not valid JSON: Expecting property name enclosed in double quotes\n"
    )


def test_validate_checks_tool_calls_against_declared_tools(runner: CliRunner, tmp_path: Path) -> None:
    doc = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    doc["messages"][4]["tool_call"]["arguments"] = '{"format": "kelvin"}'
    doc["messages"].append(
        {
            "role": "assistant",
            "thinking": "Also…",
            "tool_call": {"recipient": "functions.nope", "arguments": "{}"},
        }
    )
    bad = write(tmp_path, "bad.json", json.dumps(doc))
    result = run(runner, "validate", bad)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{bad}: E-CALL-SCHEMA messages[4]: arguments to functions.get_current_weather at (top level): "
        "'location' is a required property",
        f"{bad}: E-PARSE-HEADER messages[7]: tool call to functions.nope without call_id (OCM §8.2)",
        f"{bad}: E-CALL-SCHEMA messages[7]: call to undeclared tool 'functions.nope'",
    ]
    undeclared = run(runner, "validate", "-", input=json.dumps(doc["messages"][2:5]))
    assert undeclared.stdout == "-: ok\n"


def test_validate_mixed_files_and_encoding(runner: CliRunner, tmp_path: Path) -> None:
    good = write(tmp_path, "good.txt", "version: 2.2\n<|start|>user<|message|>hi<|end|>")
    latin = write(tmp_path, "latin.txt", b"<|start|>user<|message|>h\xe9<|end|>")
    result = run(runner, "validate", good, latin)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{good}: ok",
        f"{latin}:1:26: E-PARSE input is not UTF-8 (byte 25)",
    ]


# --- convert ----------------------------------------------------------------------------

OCM_TEXT = (
    "<|start|>assistant to=functions.f call_id=c1<|channel|>commentary<|constrain|>json"
    "<|message|>{}<|call|>\n"
    "<|start|>tool to=assistant call_id=c1 name=functions.f<|channel|>commentary<|message|>42<|end|>"
)
HARMONY_TEXT = (
    "<|start|>assistant to=functions.f<|channel|>commentary <|constrain|>json<|message|>{}<|call|>"
    "<|start|>functions.f to=assistant<|channel|>commentary<|message|>42<|end|>"
)


def test_convert_ocm_to_harmony_and_back(runner: CliRunner) -> None:
    harmony = run(runner, "convert", "-", "--to", "harmony", input=OCM_TEXT)
    assert harmony.exit_code == 0
    assert harmony.stdout == HARMONY_TEXT + "\n"
    ocm = run(runner, "convert", "-", "--to", "ocm", input=harmony.stdout)
    assert ocm.stdout == OCM_TEXT.replace(" call_id=c1", "") + "\n"


def test_convert_text_to_json_and_back(runner: CliRunner, tmp_path: Path) -> None:
    as_json = run(runner, "convert", write(tmp_path, "t.txt", OCM_TEXT), "--to", "json", "--compact")
    data = json.loads(as_json.stdout)
    assert as_json.stdout.count("\n") == 1
    assert data["messages"][0]["tool_call"] == {
        "id": "c1",
        "recipient": "functions.f",
        "content_type": "json",
        "constrained": True,
        "arguments": "{}",
    }
    back = run(runner, "convert", write(tmp_path, "t.json", as_json.stdout), "--to", "ocm")
    assert back.stdout == OCM_TEXT + "\n"
    pretty = run(runner, "convert", "-", "--to", "json", input=as_json.stdout)
    assert pretty.stdout == json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def test_convert_keeps_analysis_and_reads_tokens(runner: CliRunner) -> None:
    result = run(runner, "convert", "-", "--to", "json", input=CHAT)
    assert json.loads(result.stdout) == CHAT_JSON
    ids = Renderer(RenderConfig(cot=CoTPolicy.KEEP)).tokens(conversation_from_json(CHAT_JSON))
    tokens = run(runner, "convert", "-", "--to", "json", input=json.dumps(ids))
    assert json.loads(tokens.stdout) == CHAT_JSON
    text = run(runner, "convert", "-", "--to", "harmony", input=json.dumps(CHAT_JSON["messages"]))
    assert "<|channel|>analysis" in text.stdout


def test_convert_json_input_detected_by_first_character(runner: CliRunner) -> None:
    result = run(
        runner,
        "convert",
        "-",
        "--to",
        "harmony",
        input='\n  {"messages": [{"role": "user", "content": "x"}]}',
    )
    assert result.stdout == "<|start|>user<|message|>x<|end|>\n"


def test_convert_errors(runner: CliRunner) -> None:
    strict = run(runner, "convert", "-", "--to", "json", input=BROKEN)
    assert_failed(strict)
    assert strict.stderr.startswith("error: E-PARSE-UNEXPECTED-TOKEN: ")
    lenient = run(runner, "convert", "-", "--to", "ocm", "--lenient", input=BROKEN)
    assert lenient.exit_code == 0
    assert lenient.stderr.count("warning: ") == 3
    bad_json = run(runner, "convert", "-", "--to", "ocm", input='{"messages": [{"role": "robot"}]}')
    assert_failed(bad_json)
    assert bad_json.stderr.startswith("error: E-INTERCHANGE: messages[0].role: expected one of ")


def _messages(result: Result) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = json.loads(result.stdout)["messages"]
    return messages


def test_section_16_2_converts_with_call_ids(runner: CliRunner) -> None:
    text = (
        "<|start|>assistant to=functions.get_current_weather call_id=wx1<|channel|>commentary"
        '<|constrain|>json<|message|>{"location":"Tokyo"}<|call|>\n'
        "<|start|>tool name=functions.get_current_weather call_id=wx1 to=assistant<|channel|>commentary"
        '<|message|>{"ok":true}<|end|>'
    )
    call, reply = _messages(run(runner, "convert", "-", "--to", "json", input=text))
    assert call["tool_call"]["id"] == reply["call_id"] == "wx1"
    assert reply["name"] == "functions.get_current_weather"


# --- convert: terminators ---------------------------------------------------------------

ANSWERED = (
    "<|start|>user<|message|>What is 2 + 2?<|end|>\n<|start|>assistant<|channel|>final<|message|>4.<|return|>"
)


@pytest.mark.parametrize("target", ["harmony", "ocm"])
def test_convert_keeps_a_final_return(runner: CliRunner, target: str) -> None:
    result = run(runner, "convert", "-", "--to", target, input=ANSWERED)
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith("<|channel|>final<|message|>4.<|return|>\n")
    assert result.stdout.count("<|end|>") == 1


def test_convert_keeps_the_return_through_json(runner: CliRunner) -> None:
    as_json = run(runner, "convert", "-", "--to", "json", input=ANSWERED)
    back = run(runner, "convert", "-", "--to", "ocm", input=as_json.stdout)
    assert back.stdout == ANSWERED + "\n"
    harmony = run(runner, "convert", "-", "--to", "harmony", input=ANSWERED)
    assert run(runner, "convert", "-", "--to", "ocm", input=harmony.stdout).stdout == ANSWERED + "\n"


def test_convert_history_ends_every_message(runner: CliRunner) -> None:
    expected = ANSWERED.replace("<|return|>", "<|end|>") + "\n"
    assert run(runner, "convert", "-", "--to", "ocm", "--history", input=ANSWERED).stdout == expected
    as_json = run(runner, "convert", "-", "--to", "json", input=ANSWERED).stdout
    assert run(runner, "convert", "-", "--to", "ocm", "--history", input=as_json).stdout == expected


def test_convert_keeps_each_terminator_of_text(runner: CliRunner) -> None:
    text = (
        "<|start|>user<|message|>a<|end|>\n"
        "<|start|>assistant<|channel|>final<|message|>b<|return|>\n"
        "<|start|>user<|message|>c<|end|>\n"
        "<|start|>assistant<|channel|>final<|message|>d<|end|>"
    )
    assert run(runner, "convert", "-", "--to", "ocm", input=text).stdout == text + "\n"
    ids = load_encoding().encode(text.replace("\n", ""), allowed_special="all")
    tokens = run(runner, "convert", "-", "--to", "harmony", input=json.dumps(ids))
    assert tokens.stdout == text.replace("\n", "") + "\n"


def test_convert_of_json_ends_a_final_answer_in_return(runner: CliRunner) -> None:
    result = run(runner, "convert", str(EXAMPLE), "--to", "harmony")
    training = Renderer(RenderConfig(cot=CoTPolicy.KEEP)).training_text(example())
    assert result.stdout == training + "\n"
    history = run(runner, "convert", str(EXAMPLE), "--to", "ocm", "--history")
    assert (
        history.stdout
        == Renderer(RenderConfig(profile=Profile.OCM, cot=CoTPolicy.KEEP)).text(example()) + "\n"
    )
    call = run(runner, "convert", "-", "--to", "ocm", input=json.dumps(CHAT_JSON["messages"][:1]))
    assert call.stdout.endswith("<|end|>\n")


def test_convert_writes_the_transcript_header_once(runner: CliRunner) -> None:
    text = (
        "version: '2.2'\nmodel: m\n<|start|>user<|message|>hi<|end|>\n"
        "<|start|>assistant<|channel|>final<|message|>yo<|return|>"
    )
    result = run(runner, "convert", "-", "--to", "ocm", input=text)
    assert result.stdout == text + "\n"
