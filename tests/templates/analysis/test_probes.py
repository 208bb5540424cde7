"""The probe conversations and their renders: memoised, on copies, refusals kept as
errors; the tool-call probes rendered with the message shape the template takes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from openchatml.templates.analysis.probes import (
    ANSWER,
    NAME1,
    NAME2,
    TOOL_RESULT,
    USER,
    VAL1,
    VAL3,
    ProbeRenderer,
    assistant_message,
    render_tool_probes,
    tail_of,
    tool_call,
    tool_spec,
    user_message,
)
from openchatml.templates.environment import ChatTemplate

PLAIN = (
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content or '' }}"
    "{% for c in m.tool_calls or [] %}<call>{{ c.function.name }} {{ c.function.arguments | tojson }}</call>"
    "{% endfor %}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


class CountingTemplate(ChatTemplate):
    """A template that counts its renders and spoils the messages it is given."""

    renders = 0

    def render(self, messages: Sequence[Mapping[str, Any]], *args: Any, **kwargs: Any) -> str:
        self.renders += 1
        out = super().render(messages, *args, **kwargs)
        for message in messages:
            message["content"] = "SPOILED"  # type: ignore[index]
        return out


def test_tail_of_is_what_follows_the_last_user_message() -> None:
    assert tail_of(f"<u>{USER}</u><u>{USER}</u><a>") == "</u><a>"
    assert tail_of(None) is None
    assert tail_of("no user here") is None
    assert tail_of("a|b|c", needle="|") == "c"


def test_renders_are_memoised_and_made_on_copies() -> None:
    template = CountingTemplate(PLAIN)
    renderer = ProbeRenderer(template)
    messages = [user_message(), assistant_message(ANSWER)]
    first = renderer.render(messages)
    assert first == f"<|user|>{USER}<|end|><|assistant|>{ANSWER}<|end|>"
    assert messages[1]["content"] == ANSWER
    assert renderer.render(messages) == first
    assert template.renders == 1
    assert renderer.render(messages, gen=True) == first + "<|assistant|>"
    assert template.renders == 2


def test_a_refused_render_is_none_and_its_error_kept() -> None:
    source = (
        "{% if messages | length > 1 %}{{ raise_exception('one message only') }}{% endif %}{{ messages }}"
    )
    renderer = ProbeRenderer(ChatTemplate(source))
    assert renderer.last_error() == "the answer is dropped"
    assert renderer.tail(assistant_message(ANSWER)) is None
    assert len(renderer.errors) == 1 and "one message only" in renderer.last_error()


def test_the_base_takes_a_system_message_when_a_user_message_alone_is_refused() -> None:
    source = (
        "{% if messages[0].role != 'system' %}{{ raise_exception('system first') }}{% endif %}"
        "{% for m in messages %}[{{ m.content }}]{% endfor %}"
    )
    renderer = ProbeRenderer(ChatTemplate(source))
    assert renderer.find_base()
    assert [m["role"] for m in renderer.base] == ["system", "user"]
    assert renderer.tail(assistant_message(ANSWER)) == f"][{ANSWER}]"
    assert not ProbeRenderer(ChatTemplate("{{ raise_exception('never') }}")).find_base()


def test_probe_messages_and_tools() -> None:
    assert tool_call(NAME1, {"k": "é"}, "id1", as_string=True)["function"]["arguments"] == '{"k": "é"}'
    assert tool_call(NAME1, {"k": 1}, "id1", as_string=False)["function"]["arguments"] == {"k": 1}
    spec = tool_spec(NAME2, {"a": "integer"})["function"]
    assert spec["parameters"]["required"] == ["a"]
    assert spec["parameters"]["properties"]["a"]["type"] == "integer"


def test_tool_probes_of_a_template_that_takes_dicts() -> None:
    probes = render_tool_probes(ProbeRenderer(ChatTemplate(PLAIN)))
    assert probes is not None
    assert (probes.as_string, probes.content) == (False, None)
    assert f'<call>{NAME1} {{"first": "{VAL1}"}}</call>' in probes.one
    assert probes.two is not None and NAME2 in probes.two
    assert probes.followed is not None and TOOL_RESULT in probes.followed
    assert probes.pair is not None and VAL3 in probes.pair
    assert probes.typed is not None and '{"first": 1234}' in probes.typed
    assert probes.markup is not None and '"MM<b>&\\nNN"' in probes.markup


def test_tool_probes_take_the_shape_the_template_writes_well() -> None:
    """Content ``None`` written as text is no shape to probe with: ``""`` is taken."""
    raw = PLAIN.replace("{{ m.content or '' }}", "{{ m.content }}").replace(
        "{% for c in m.tool_calls or [] %}",
        "{% for c in m.tool_calls or [] %}"
        "{% if m.tool_calls | length > 1 %}{{ raise_exception('one call') }}{% endif %}",
    )
    probes = render_tool_probes(ProbeRenderer(ChatTemplate(raw)))
    assert probes is not None
    assert (probes.as_string, probes.content) == (False, "")
    assert "None" not in probes.one
    assert probes.two is None


def test_no_tool_probes_for_a_template_without_calls() -> None:
    source = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
    assert render_tool_probes(ProbeRenderer(ChatTemplate(source))) is None
