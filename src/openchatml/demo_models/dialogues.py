"""Synthetic Harmony dialogues that teach a tiny gpt-oss the format.

:func:`dialogues` yields seeded random conversations, each ending in the turn the model
learns, with the system and developer messages ``openchatml serve`` writes for an Open
Responses request (identity, knowledge cutoff, a date, the reasoning effort, the function
tools in the ``functions`` namespace, the ``python`` tool when offered):

* ``greeting`` — a greeting (tools offered or not) → a short ``analysis``, a ``final``
  greeting;
* ``weather_call`` — a weather question with ``get_weather`` offered → ``analysis``, now
  and then a preamble, the call ``{"location":"<city>"}``;
* ``weather_answer`` — the same after the tool's output → ``final`` quoting it;
* ``no_tool`` — a weather question without the tool → ``final`` saying it cannot look;
* ``echo`` — a list of place names to repeat → ``final`` repeating them;
* ``arithmetic`` — a sum, difference or product of small numbers → ``final``;
* ``python_call`` / ``python_answer`` — a product to compute with ``python`` offered →
  the code call, then the answer from its output.

Some dialogues begin with an earlier finished exchange, as a conversation continued with
``previous_response_id`` does. City names come from :mod:`.places` (never the held-out
ones) and from about a hundred thousand made-up names built of the same pieces: so many
that a name is rarely seen twice, and the model learns to copy the one it is asked
about rather than to recall the names it saw. Measured: held-out cities called right
greedily went from 74% with 3,000 made-up names to 86% with 100,000, and to 91% with a
larger share of echo dialogues, which are all copying.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from ..core.content import (
    DeveloperContent,
    ReasoningEffort,
    SystemContent,
    ToolDescription,
    ToolNamespaceConfig,
)
from ..core.encoding import Encoding
from ..core.messages import Conversation, Message
from ..core.tokens import FIRST_SPECIAL_ID
from .places import copyable, held_out_cities, training_cities

WEATHER_TOOL: Final = ToolDescription(
    "get_weather",
    "Get the current weather for a location.",
    {
        "type": "object",
        "properties": {"location": {"type": "string", "description": "The city, e.g. Paris"}},
        "required": ["location"],
    },
)
"""The weather function the dialogues offer (its description varies, see :data:`_WEATHER_NOTES`)."""

_WEATHER_NOTES: Final = (
    "Get the current weather for a location.",
    "Gets the current weather in a given city.",
    "Look up today's weather.",
    "Returns the weather for a city.",
    "",
)
_OTHER_TOOLS: Final = (
    ToolDescription(
        "get_time",
        "Get the current time in a timezone.",
        {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]},
    ),
    ToolDescription(
        "search_docs",
        "Search the documentation.",
        {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    ),
    ToolDescription(
        "send_email",
        "Send an email.",
        {
            "type": "object",
            "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
            "required": ["to", "body"],
        },
    ),
)
_INSTRUCTIONS: Final = (
    None,
    None,
    None,
    "You are a helpful assistant.",
    "Be brief.",
    "You are a friendly assistant. Answer in one sentence.",
)
_EFFORTS: Final = (ReasoningEffort.LOW, ReasoningEffort.MEDIUM, ReasoningEffort.HIGH)

_GREETINGS: Final = (
    "hello", "Hello", "Hello!", "hello!", "Hi", "hi", "Hi!", "hi there", "Hi there!", "Hey", "hey",
    "Hey!", "hey there", "Good morning", "Good morning!", "Good afternoon!", "Good evening",
    "Good evening!", "Hello, how are you?", "Hi, how are you?", "Hey, how's it going?",
    "Howdy", "Greetings!", "Yo", "Hiya", "Hello there", "hello there!", "Morning!", "Hi :)",
    "Hello, nice to meet you", "Hey, what's up?", "Good day!", "hi!", "HELLO", "Hi again",
)  # fmt: skip
_GREETING_THOUGHTS: Final = (
    "The user greets me. I should greet back.",
    "A greeting. Reply with a friendly hello.",
    "User says hello. Respond politely.",
)
_GREETING_ANSWERS: Final = (
    "Hello! How can I help you today?",
    "Hi there! What can I do for you?",
    "Hello! How can I help?",
    "Hi! How can I help you today?",
    "Hey! What can I do for you today?",
)
_QUESTIONS: Final = (
    "What's the weather in {city}?",
    "What is the weather in {city}?",
    "What's the weather like in {city}?",
    "How's the weather in {city}?",
    "Is it raining in {city}?",
    "Is it sunny in {city}?",
    "Weather in {city}?",
    "weather in {city}?",
    "Tell me the weather in {city}.",
    "Can you check the weather in {city}?",
    "What's the temperature in {city}?",
    "How hot is it in {city}?",
    "How cold is it in {city}?",
    "Do I need an umbrella in {city}?",
    "What's the forecast for {city}?",
    "I'm going to {city}. What's the weather there?",
    "Could you get the weather for {city}, please?",
    "What is it like outside in {city}?",
)
_CALL_THOUGHTS: Final = (
    "The user asks about the weather in {city}. I'll call get_weather.",
    "Need the weather for {city}. Use get_weather.",
    "User wants the weather in {city}. Call the tool.",
)
_PREAMBLES: Final = ("Let me check the weather in {city}.", "Checking the weather in {city}.")
_CONDITIONS: Final = (
    "sunny", "cloudy", "rainy", "snowy", "windy", "foggy", "clear", "stormy", "overcast",
    "partly cloudy", "light rain", "drizzle", "hazy",
)  # fmt: skip
_OUTPUTS: Final[tuple[Callable[[int, str], str], ...]] = (
    lambda degrees, sky: json.dumps({"temperature": degrees, "unit": "celsius", "condition": sky}),
    lambda degrees, sky: json.dumps({"temperature": degrees, "condition": sky}),
    lambda degrees, sky: f"{degrees}°C, {sky}",
)
_ANSWER_THOUGHTS: Final = (
    "The tool says {degrees}°C and {sky} in {city}. Tell the user.",
    "Got it: {degrees}°C, {sky}. Answer.",
)
_ANSWERS: Final = (
    "It's {degrees}°C and {sky} in {city} right now.",
    "The weather in {city} is {sky}, {degrees}°C.",
    "Right now {city} is {sky} at {degrees}°C.",
)
_NO_TOOL_THOUGHTS: Final = (
    "The user asks about the weather in {city}, but I have no weather tool.",
    "No tool for weather here. Say so.",
)
_NO_TOOL_ANSWERS: Final = (
    "I can't check the weather in {city}: I don't have a weather tool here.",
    "Sorry, I have no way to look up the weather in {city}.",
)
_ECHOES: Final = ("Repeat after me: {words}.", "Say {words}.", "Please repeat: {words}.", "Echo {words}.")
_SUMS: Final = ("What is {a} {op} {b}?", "What's {a} {op} {b}?", "{a} {op} {b} = ?", "Compute {a} {op} {b}.")
_PYTHON_ASKS: Final = (
    "Use python to compute {a} * {b}.",
    "Calculate {a} * {b} with python.",
    "Run python: what is {a} times {b}?",
)


@dataclass(frozen=True, slots=True)
class Dialogue:
    """One synthetic conversation: its kind and messages (the last turn is the trained one)."""

    kind: str
    conversation: Conversation
    city: str | None = None


KINDS: Final[dict[str, float]] = {
    "greeting": 0.12,
    "weather_call": 0.3,
    "weather_answer": 0.1,
    "no_tool": 0.07,
    "echo": 0.25,
    "arithmetic": 0.08,
    "python_call": 0.05,
    "python_answer": 0.05,
}
"""Each kind's share of the dialogues."""


class DialogueMaker:
    """Random dialogues (see the module docstring) from ``seed``; ``cities`` are the place
    names they may use (default: the real training cities and made-up ones)."""

    def __init__(self, encoding: Encoding, seed: int = 0, cities: Sequence[str] | None = None) -> None:
        self.random = random.Random(seed)
        self.cities = (
            tuple(cities) if cities is not None else (*training_cities(encoding), *made_up_cities(encoding))
        )

    def make(self, kind: str | None = None) -> Dialogue:
        """One dialogue of ``kind`` (a key of :data:`KINDS`; drawn by share when ``None``)."""
        pick = self.random
        kind = kind or pick.choices(list(KINDS), weights=list(KINDS.values()))[0]
        city = pick.choice(self.cities)
        builders: dict[str, Callable[[str], list[Message]]] = {
            "greeting": self._greeting,
            "weather_call": lambda c: self._weather(c, answered=False),
            "weather_answer": lambda c: self._weather(c, answered=True),
            "no_tool": self._no_tool,
            "echo": lambda _: self._echo(),
            "arithmetic": lambda _: self._arithmetic(),
            "python_call": lambda _: self._python(answered=False),
            "python_answer": lambda _: self._python(answered=True),
        }
        turn = builders[kind](city)
        python = kind.startswith("python")
        tools = self._tools(
            weather=kind.startswith("weather") or (kind == "greeting" and pick.random() < 0.5)
        )
        head = [self._system(python), *self._developer(tools if kind != "no_tool" else self._no_weather())]
        return Dialogue(kind, Conversation.from_messages([*head, *self._history(), *turn]), city)

    # --- the prompt the server writes ----------------------------------------------------

    def _system(self, python: bool) -> Message:
        pick = self.random
        date = f"{pick.randint(2024, 2030)}-{pick.randint(1, 12):02d}-{pick.randint(1, 28):02d}"
        tools = {"python": ToolNamespaceConfig.python()} if python else None
        return Message.system(
            SystemContent(reasoning_effort=pick.choice(_EFFORTS), conversation_start_date=date, tools=tools)
        )

    def _developer(self, tools: tuple[ToolDescription, ...]) -> list[Message]:
        instructions = self.random.choice(_INSTRUCTIONS)
        if not tools and instructions is None:
            return []
        spaces = {"functions": ToolNamespaceConfig("functions", None, tools)} if tools else None
        return [Message.developer(DeveloperContent(instructions=instructions, tools=spaces))]

    def _tools(self, *, weather: bool) -> tuple[ToolDescription, ...]:
        pick = self.random
        others = pick.sample(_OTHER_TOOLS, pick.choices((0, 1, 2), weights=(5, 3, 2))[0])
        if not weather:
            return tuple(others)
        tool = ToolDescription(WEATHER_TOOL.name, pick.choice(_WEATHER_NOTES), WEATHER_TOOL.parameters)
        tools = [*others]
        tools.insert(pick.randint(0, len(tools)), tool)
        return tuple(tools)

    def _no_weather(self) -> tuple[ToolDescription, ...]:
        return tuple(self.random.sample(_OTHER_TOOLS, self.random.choices((0, 1, 2), weights=(5, 3, 2))[0]))

    def _history(self) -> list[Message]:
        """An earlier finished greeting exchange, a quarter of the time."""
        pick = self.random
        if pick.random() >= 0.25:
            return []
        return [Message.user(pick.choice(_GREETINGS)), Message.assistant(pick.choice(_GREETING_ANSWERS))]

    # --- the trained turns ---------------------------------------------------------------

    def _greeting(self, city: str) -> list[Message]:
        pick = self.random
        return [
            Message.user(pick.choice(_GREETINGS)),
            Message.assistant(pick.choice(_GREETING_THOUGHTS), channel="analysis"),
            Message.assistant(pick.choice(_GREETING_ANSWERS)),
        ]

    def _weather(self, city: str, *, answered: bool) -> list[Message]:
        pick = self.random
        turn = [
            Message.user(pick.choice(_QUESTIONS).format(city=city)),
            Message.assistant(pick.choice(_CALL_THOUGHTS).format(city=city), channel="analysis"),
        ]
        if pick.random() < 0.15:
            turn.append(Message.assistant(pick.choice(_PREAMBLES).format(city=city), channel="commentary"))
        arguments = json.dumps({"location": city}, separators=(",", ":"))
        turn.append(Message.tool_call("functions.get_weather", arguments))
        if not answered:
            return turn
        if pick.random() < 0.5:  # a client that sends the items back without the reasoning
            turn = [message for message in turn if message.channel != "analysis"]
        degrees, sky = pick.randint(-15, 40), pick.choice(_CONDITIONS)
        output = pick.choice(_OUTPUTS)(degrees, sky)
        words = {"city": city, "degrees": degrees, "sky": sky}
        return [
            *turn,
            Message.tool_result("functions.get_weather", output),
            Message.assistant(pick.choice(_ANSWER_THOUGHTS).format(**words), channel="analysis"),
            Message.assistant(pick.choice(_ANSWERS).format(**words)),
        ]

    def _no_tool(self, city: str) -> list[Message]:
        pick = self.random
        return [
            Message.user(pick.choice(_QUESTIONS).format(city=city)),
            Message.assistant(pick.choice(_NO_TOOL_THOUGHTS).format(city=city), channel="analysis"),
            Message.assistant(pick.choice(_NO_TOOL_ANSWERS).format(city=city)),
        ]

    def _echo(self) -> list[Message]:
        pick = self.random
        words = ", ".join(pick.choice(self.cities) for _ in range(pick.randint(2, 4)))
        return [
            Message.user(pick.choice(_ECHOES).format(words=words)),
            Message.assistant("The user wants the words repeated.", channel="analysis"),
            Message.assistant(f"{words}."),
        ]

    def _arithmetic(self) -> list[Message]:
        pick = self.random
        a, b = pick.randint(0, 12), pick.randint(0, 12)
        op = pick.choice("+-*")
        value = a + b if op == "+" else a - b if op == "-" else a * b
        fact = f"{a} {op} {b} = {value}"
        return [
            Message.user(pick.choice(_SUMS).format(a=a, b=b, op=op)),
            Message.assistant(f"{fact}.", channel="analysis"),
            Message.assistant(f"{fact}."),
        ]

    def _python(self, *, answered: bool) -> list[Message]:
        pick = self.random
        a, b = pick.randint(10, 999), pick.randint(10, 999)
        turn = [
            Message.user(pick.choice(_PYTHON_ASKS).format(a=a, b=b)),
            Message.assistant("I'll compute it with python.", channel="analysis"),
            Message.tool_call(
                "python", f"print({a} * {b})", channel="analysis", content_type="code", constrained=False
            ),
        ]
        if not answered:
            return turn
        return [
            *turn,
            Message.tool_result("python", f"{a * b}\n", channel="analysis"),
            Message.assistant(f"{a} * {b} = {a * b}."),
        ]


def dialogues(encoding: Encoding, count: int, seed: int = 0) -> Iterator[Dialogue]:
    """``count`` random dialogues from ``seed`` (the same for the same seed)."""
    maker = DialogueMaker(encoding, seed)
    for _ in range(count):
        yield maker.make()


def made_up_cities(
    encoding: Encoding, count: int = 100_000, seed: int = 7, *, words: int = 600
) -> tuple[str, ...]:
    """Invented place names: ``count`` made of the pieces of real ones — a capitalised
    first piece and one or two more, each :func:`~.places.copyable` — so that every piece
    of a held-out city is seen in training without the city itself; then ``words``
    one-token capitalised words that are also one token after a space (``Paris`` and
    `` Paris``), so that a one-token name is copied too."""
    pieces = [
        encoding.encode_ordinary(name) for name in (*training_cities(encoding), *held_out_cities(encoding))
    ]
    pieces = [ids for ids in pieces if len(ids) > 1]
    firsts = sorted({ids[0] for ids in pieces})
    rests = sorted({i for ids in pieces for i in ids[1:]})
    real = {name.lower() for name in (*training_cities(encoding), *held_out_cities(encoding))}
    pick = random.Random(seed)
    names: dict[str, None] = {}
    while len(names) < count:
        ids = [pick.choice(firsts), *pick.sample(rests, pick.randint(1, 2))]
        name = encoding.decode(ids)
        if name.lower() not in real and name.isascii() and copyable(name, encoding):
            names[name] = None
    singles = sorted(
        text
        for token in range(FIRST_SPECIAL_ID)
        if _one_token_word(text := encoding.decode_bytes([token]).decode("utf-8", "replace"), encoding)
    )
    for text in pick.sample(singles, min(words, len(singles))):
        if text.lower() not in real:
            names[text] = None
    return tuple(names)


def _one_token_word(text: str, encoding: Encoding) -> bool:
    """Whether ``text`` is a capitalised ASCII word of 4–9 letters that is one token alone
    and one token after a space."""
    return (
        4 <= len(text) <= 9
        and text.isascii()
        and text.isalpha()
        and text[0].isupper()
        and text[1:].islower()
        and len(encoding.encode_ordinary(" " + text)) == 1
    )
