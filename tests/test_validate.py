"""``openchatml validate`` holds files to the MUSTs of OpenChatML 2.2 (``--profile ocm``,
the default): each broken rule is a line ``FILE:LINE:COL: E-CODE message`` and exit status
1; Harmony text (``--profile harmony``), token ids and completions need no YAML header."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner, Result

from openchatml import load_encoding
from openchatml.cli import main

DOC = "version: 2.2\n"
CALL = "<|start|>assistant to=functions.f call_id=a<|channel|>commentary<|message|>{}<|call|>\n"


def validate(*args: str, input: str) -> Result:
    return CliRunner().invoke(main, ["validate", *args], input=input)


# text, the line validate prints (after "-:")
BROKEN: dict[str, tuple[str, str]] = {
    "8.2 call without call_id": (
        DOC + "<|start|>assistant to=functions.f<|channel|>commentary<|message|>{}<|call|>",
        "2:55: E-PARSE-HEADER tool call to functions.f without call_id (OCM §8.2)",
    ),
    "8.2 repeated call_id": (
        DOC + CALL + CALL,
        "3:65: E-PARSE-HEADER call_id=a is used by an earlier call (OCM §8.2)",
    ),
    "8.2 reply to no call": (
        DOC
        + CALL
        + "<|start|>tool name=functions.f call_id=b to=assistant<|channel|>commentary<|message|>1<|end|>",
        "3:75: E-CALL-SCHEMA tool reply with call_id=b answers no call (OCM §8.2)",
    ),
    "8.3 function on analysis": (
        DOC + "<|start|>assistant to=functions.f call_id=a<|channel|>analysis<|message|>{}<|call|>",
        "2:63: E-PARSE-HEADER call to functions.f on 'analysis': a function tool is called on commentary",
    ),
    "8.3 function on final": (
        DOC + "<|start|>assistant to=functions.f call_id=a<|channel|>final<|message|>{}<|call|>",
        "2:60: E-PARSE-HEADER call to functions.f on 'final': a function tool is called on commentary",
    ),
    "5 bogus channel": (
        DOC + "<|start|>assistant<|channel|>bogus<|message|>x<|end|>",
        "2:35: E-PARSE-HEADER channel 'bogus' is not a valid channel (analysis, commentary, final)",
    ),
    "5 dashed channel": (
        DOC + "<|start|>assistant<|channel|>––commentary<|message|>x<|end|>",
        "2:42: E-PARSE-HEADER channel '––commentary' is not a valid channel (analysis, commentary, final)",
    ),
    "6 undefined intent": (
        DOC + "<|start|>assistant intent=shout<|channel|>commentary<|message|>x<|end|>",
        "2:53: E-PARSE-HEADER intent 'shout' is not defined (debug, preamble, status)",
    ),
    "2 no document header": (
        "<|start|>user<|message|>x<|end|>",
        "1:1: E-PARSE-DOCUMENT-HEADER the transcript does not begin with its YAML header",
    ),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_each_broken_rule_is_reported_with_code_and_position(name: str) -> None:
    text, line = BROKEN[name]
    result = validate("-", input=text)
    assert result.exit_code == 1
    (printed,) = result.stdout.splitlines()
    assert printed.startswith(f"-:{line}")


def test_a_good_ocm_transcript_is_ok() -> None:
    reply = "<|start|>tool name=functions.f call_id=a to=assistant<|channel|>commentary<|message|>1<|end|>\n"
    result = validate("-", input=DOC + CALL + reply)
    assert (result.exit_code, result.stdout) == (0, "-: ok\n")


HARMONY = (
    "<|start|>user<|message|>Weather?<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}<|call|>"
    "<|start|>functions.f to=assistant<|channel|>commentary<|message|>1<|end|>"
    "<|start|>assistant<|channel|>final<|message|>Sunny.<|return|>"
)


def test_harmony_text_needs_no_header_and_no_call_id() -> None:
    result = validate("--profile", "harmony", "-", input=HARMONY)
    assert (result.exit_code, result.stdout) == (0, "-: ok\n")


def test_token_ids_need_no_document_header() -> None:
    ids = load_encoding().encode(
        "<|start|>user<|message|>x<|end|><|start|>assistant<|channel|>final<|message|>y<|return|>",
        allowed_special="all",
    )
    result = validate("-", input=json.dumps(ids))
    assert (result.exit_code, result.stdout) == (0, "-: ok\n")


def test_a_completion_needs_no_header_but_a_stop_token() -> None:
    good = validate("--role", "assistant", "-", input="<|channel|>final<|message|>Hi<|return|>")
    assert (good.exit_code, good.stdout) == (0, "-: ok\n")
    cut = validate("--role", "assistant", "-", input="<|channel|>final<|message|>Hi<|end|>")
    assert cut.exit_code == 1
    assert cut.stdout.startswith("-:1:37: E-STREAM-TRUNCATED the completion ended after <|end|>")
    harmony = validate(
        "--role", "assistant", "--profile", "harmony", "-", input="<|channel|>final<|message|>Hi<|end|>"
    )
    assert (harmony.exit_code, harmony.stdout) == (0, "-: ok\n")


def test_a_json_conversation_is_held_to_the_rules() -> None:
    doc = {
        "messages": [
            {"role": "user", "content": "Hi"},
            {
                "role": "assistant",
                "channel": "commentary",
                "tool_call": {"recipient": "functions.f", "arguments": "{}"},
            },
            {"role": "assistant", "channel": "bogus", "content": "x"},
        ]
    }
    result = validate("-", input=json.dumps(doc))
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "-: E-PARSE-HEADER messages[1]: tool call to functions.f without call_id (OCM §8.2)",
        "-: E-PARSE-HEADER messages[2]: channel 'bogus' is not a valid channel (analysis, commentary, final)",
    ]
    harmony = validate("--profile", "harmony", "-", input=json.dumps(doc))
    assert (harmony.exit_code, harmony.stdout) == (0, "-: ok\n")
