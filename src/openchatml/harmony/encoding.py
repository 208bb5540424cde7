"""The openai-harmony encoding: render conversations, parse completions, encode and decode."""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Sequence
from collections.abc import Set as AbstractSet
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel

from ..core.encoding import Encoding, load_encoding
from ..core.errors import OCMError, Position, StreamTruncatedError
from ..core.parse import StreamParser
from ..core.render import CoTPolicy, Profile, RenderConfig, Renderer
from ._conversion import from_core_message, to_core_message, to_core_messages, to_core_role
from ._strict_parser import StrictParser
from .errors import HarmonyError, as_harmony
from .messages import Conversation, Message, Role


class RenderConversationConfig(BaseModel):
    """``auto_drop_analysis``: drop earlier analysis once the last assistant message is final."""

    auto_drop_analysis: bool = True


class RenderOptions(BaseModel):
    """``conversation_has_function_tools``: add the ``functions`` note to a system message."""

    conversation_has_function_tools: bool = False


class HarmonyEncodingName(StrEnum):
    """The encodings :func:`load_harmony_encoding` knows."""

    HARMONY_GPT_OSS = "HarmonyGptOss"


@functools.lru_cache(maxsize=64)
def _special_regex(tokens: frozenset[str]) -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, sorted(tokens, key=len, reverse=True))))


def _disallowed(token: str) -> HarmonyError:
    return HarmonyError(
        f"Encountered text corresponding to disallowed special token {token!r}. "
        "Pass it in allowed_special to encode it as a special token, or leave it out of "
        "disallowed_special (disallowed_special=() for none) to encode it as text."
    )


class HarmonyEncoding:
    """Renders conversations to token ids, parses completions, encodes and decodes text.

    Get one with :func:`load_harmony_encoding`. Rendering raises :class:`HarmonyError`
    (a :class:`~openchatml.core.errors.RenderError`) for a conversation that cannot be
    rendered, such as a tool message without a name.
    """

    def __init__(
        self, name: str = HarmonyEncodingName.HARMONY_GPT_OSS.value, encoding: Encoding | None = None
    ) -> None:
        self._name = name
        self._encoding = encoding if encoding is not None else load_encoding()
        self._drop = Renderer(RenderConfig(profile=Profile.HARMONY, cot=CoTPolicy.AUTO_DROP), self._encoding)
        self._keep = Renderer(RenderConfig(profile=Profile.HARMONY, cot=CoTPolicy.KEEP), self._encoding)
        self._specials = frozenset(self._encoding.special_tokens)
        self._all_specials_re = _special_regex(self._specials)

    @property
    def name(self) -> str:
        """``HarmonyGptOss``."""
        return self._name

    @functools.cached_property
    def special_tokens_set(self) -> set[str]:
        """The text of every special token (``<|start|>``, ``<|reserved_200014|>`` …)."""
        return set(self._specials)

    # --- rendering -------------------------------------------------------------------

    def _renderer(self, config: RenderConversationConfig | None) -> Renderer:
        return self._drop if config is None or config.auto_drop_analysis else self._keep

    def render_conversation_for_completion(
        self,
        conversation: Conversation,
        next_turn_role: Role,
        config: RenderConversationConfig | None = None,
    ) -> list[int]:
        """Token ids of ``conversation`` followed by ``<|start|>{next_turn_role}``."""
        try:
            messages = to_core_messages(conversation)
            return self._renderer(config).completion_tokens(messages, to_core_role(next_turn_role))
        except OCMError as exc:
            raise as_harmony(exc) from None

    def render_conversation(
        self, conversation: Conversation, config: RenderConversationConfig | None = None
    ) -> list[int]:
        """Token ids of ``conversation``, every message ended."""
        try:
            return self._renderer(config).tokens(to_core_messages(conversation))
        except OCMError as exc:
            raise as_harmony(exc) from None

    def render_conversation_for_training(
        self, conversation: Conversation, config: RenderConversationConfig | None = None
    ) -> list[int]:
        """Token ids of ``conversation``; a final assistant message at the end ends in ``<|return|>``."""
        try:
            return self._renderer(config).training_tokens(to_core_messages(conversation))
        except OCMError as exc:
            raise as_harmony(exc) from None

    def render(self, message: Message, render_options: RenderOptions | None = None) -> list[int]:
        """Token ids of one message."""
        has_tools = render_options is not None and render_options.conversation_has_function_tools
        try:
            return self._drop.message_tokens(to_core_message(message), has_function_tools=has_tools)
        except OCMError as exc:
            raise as_harmony(exc) from None

    # --- parsing ---------------------------------------------------------------------

    def parse_messages_from_completion_tokens(
        self, tokens: Sequence[int], role: Role | None = None, *, strict: bool = True
    ) -> list[Message]:
        """The messages a completion spells; ``role`` is the role its prompt opened.

        Input cut short inside a body gives that message as it stands. When ``strict``,
        the tokens are read as openai-harmony reads them, and :class:`HarmonyError` (a
        typed :class:`~openchatml.core.errors.ParseError`) is raised with its words where
        it raises; otherwise malformed tokens are repaired.
        """
        core_role = None if role is None else to_core_role(role)
        if strict:
            strict_parser = StrictParser(core_role, self._encoding)
            try:
                strict_parser.feed_tokens(tokens if isinstance(tokens, list | tuple) else list(tokens))
                strict_parser.close()
            except OCMError as exc:
                raise as_harmony(exc) from None
            return [from_core_message(m) for m in strict_parser.messages]
        parser = StreamParser(
            core_role,
            strict=False,
            check_constraints=False,
            allow_truncated=True,
            replace_invalid_utf8=True,
            encoding=self._encoding,
        )
        try:
            parser.feed_tokens(tokens)
            end_of_input(parser, False)
        except OCMError as exc:
            raise as_harmony(exc) from None
        return [from_core_message(m) for m in parser.messages]

    # --- tokens ----------------------------------------------------------------------

    def _decode_bytes(self, tokens: Sequence[int]) -> bytes:
        encoding = self._encoding
        try:
            data = encoding.decode_bytes(tokens)
            if data and min(tokens) < 0:
                raise ValueError
            return data
        except (ValueError, TypeError):
            limit = encoding.n_vocab
            bad = next((t for t in tokens if not (isinstance(t, int) and 0 <= t < limit)), None)
            raise HarmonyError(f"Invalid token for decoding: {bad!r}") from None

    def decode_utf8(self, tokens: Sequence[int]) -> str:
        """The text of ``tokens``; raises :class:`HarmonyError` for an unknown id or invalid UTF-8."""
        data = self._decode_bytes(tokens)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HarmonyError(f"Invalid utf-8 sequence: {exc.reason} at byte {exc.start}") from None

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The text of ``tokens``, invalid UTF-8 handled per ``errors`` (replaced by default)."""
        return self._decode_bytes(tokens).decode("utf-8", errors=errors)

    def encode(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
        disallowed_special: Literal["all"] | Collection[str] = "all",
    ) -> list[int]:
        """Token ids of ``text``.

        Special-token text becomes a special id only if it is in ``allowed_special``
        (``"all"``: every one). Text naming a special token that is in
        ``disallowed_special`` (``"all"``, the default: every one not allowed) raises
        :class:`HarmonyError`; ``disallowed_special=()`` encodes it as ordinary text.
        """
        allowed: AbstractSet[str] = self._specials if allowed_special == "all" else allowed_special
        disallowed: frozenset[str]
        if disallowed_special == "all":
            disallowed = self._specials.difference(allowed) if allowed else self._specials
        else:
            disallowed = frozenset(disallowed_special)
        if disallowed and "<|" in text:
            pattern = self._all_specials_re if disallowed is self._specials else _special_regex(disallowed)
            found = pattern.search(text)
            if found is not None:
                raise _disallowed(found.group())
        if not allowed:
            return self._encoding.encode_ordinary(text)
        if allowed is self._specials:
            return self._encoding.encode(text, allowed_special="all")
        return self._encoding.encode(text, allowed_special=frozenset(allowed))

    def is_special_token(self, token: int) -> bool:
        """Whether ``token`` is a special id (199998–201088)."""
        return self._encoding.is_special_token(token)

    def stop_tokens(self) -> list[int]:
        """``<|return|>``, ``<|end|>`` and ``<|call|>``, sorted."""
        return sorted(self._encoding.stop_tokens())

    def stop_tokens_for_assistant_actions(self) -> list[int]:
        """``<|return|>`` and ``<|call|>``, sorted: where sampling an assistant turn stops."""
        return sorted(self._encoding.stop_tokens_for_assistant_actions())


def end_of_input(parser: StreamParser, strict: bool) -> None:
    """Close ``parser``; strict, the end of input inside a header is an error.

    That includes a header that has not begun when the prompt opened ``<|start|>role``.
    """
    if strict and parser.state == "Header":
        where = Position(max(len(parser.tokens) - 1, 0), unit="token") if parser.tokens else None
        raise StreamTruncatedError("input ended inside a message header", position=where)
    parser.close()


def load_harmony_encoding(name: str | HarmonyEncodingName) -> HarmonyEncoding:
    """The encoding ``name`` (``HarmonyEncodingName.HARMONY_GPT_OSS``); ``ValueError`` for another."""
    key = str(name)
    if key != HarmonyEncodingName.HARMONY_GPT_OSS.value:
        raise ValueError(f"Invalid HarmonyEncodingName: {key}")
    return HarmonyEncoding(key, load_encoding())
