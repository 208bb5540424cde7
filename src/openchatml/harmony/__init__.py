"""A drop-in for the ``openai_harmony`` package, on top of the openchatml core.

Code written for openai-harmony runs unchanged after one import is changed::

    from openchatml.harmony import load_harmony_encoding, HarmonyEncodingName, Role, ...

The public names, signatures and results are those of ``openai-harmony`` 0.0.8: pydantic
models (``Message``, ``Conversation``, ``SystemContent`` … with their fluent ``with_*``
builders and ``to_dict``/``from_dict``), ``HarmonyEncoding`` (render, parse, encode,
decode, stop tokens) and ``StreamableParser``. Rendering a conversation gives the same
token ids, and parsing well-formed tokens gives the same messages, token by token the
same streaming state.

The models are converted to the core's frozen dataclasses at the edges, without
re-validation: a ``content_type`` of ``"<|constrain|>json"`` is the core's
``content_type="json", constrained=True``; ``RenderConversationConfig(auto_drop_analysis=
True)`` (also the default) is :attr:`~openchatml.core.render.CoTPolicy.AUTO_DROP`, ``False``
is ``KEEP``; the profile is always Harmony. ``StreamableParser.process`` only feeds the
core :class:`~openchatml.core.parse.StreamParser`; parsed messages become pydantic models when
``messages`` is read (built once each, with ``model_construct``, and shared by later
reads).

Errors. :class:`HarmonyError` derives from :class:`~openchatml.core.errors.OCMError` (and from
``RuntimeError``, like the reference's). A core error raised through this API is an
instance of both its own class and ``HarmonyError``: ``except HarmonyError``,
``except HeaderError`` and ``except OCMError`` all catch it, and its ``code`` and
``position`` are kept. Misuse that the reference answers with ``ValueError`` or a pydantic
``ValidationError`` (an unknown encoding name, a model built from wrong types) raises the
same here.

Parsing. With ``strict=True`` (the default, as vLLM uses it) completion tokens are read
as openai-harmony 0.0.8 reads them: the same messages where it returns messages (a
special token inside a body is its spelling, ``"<|start|>"``; a header keeps every token
until ``<|message|>``, so ``<|end|>`` or ``<|call|>`` there become header words, two
``<|channel|>`` give a recipient ``<|channel|>final``, ``to=`` an empty recipient), and an
error where it raises, at the same token, with its words (``unexpected tokens remaining in
message header: Some("…")``), as a typed :class:`~openchatml.core.errors.ParseError`
(``HeaderError``, ``UnexpectedTokenError``, ``StreamTruncatedError``) that is also a
``HarmonyError``. With ``strict=False`` the core parser repairs malformed input instead:
``<|start|>`` inside a body ends the message and starts another, whitespace between
messages is skipped, a header cut short is dropped, and nothing raises.

Where this differs from openai-harmony (only on malformed input or odd values):

* Read as rendered, where the reference misreads its own renders (strict or not):
  ``<|start|>user:bob`` is a user message named ``bob`` (the reference: "Unknown role",
  or a tool named ``user:bob``); ``<|start|>functions.f<|message|>`` (a tool reply with
  no recipient) is a message from the tool ``functions.f``; a content type after the
  channel with no recipient (``<|channel|>final <|constrain|>json``) is a content type,
  as openai-harmony's own test suite expects; its 0.0.8 build reads it as a recipient.
  These apply to headers as a renderer writes them (no special token but
  ``<|channel|>`` and ``<|constrain|>``).
* Strict, an id outside o200k_harmony (or not an int) raises
  :class:`~openchatml.core.errors.UnexpectedTokenError` at once; ordinary text in a
  header that spells ``<|channel|>`` or ``<|constrain|>`` raises
  :class:`~openchatml.core.errors.HeaderError` (text never becomes a marker); so does a
  header longer than 4096 ids.
* Invalid UTF-8 in a body: the reference holds the text after a bad sequence until the
  next token (sometimes never reporting it in ``last_content_delta``); here it is
  reported at once. The finished message is the same.
* Header values are sanitised when rendered, as everywhere in openchatml: whitespace
  becomes ``_``, ``<|`` loses its ``|`` and an empty value is ``_``, so that a header
  always parses back. The reference renders them as given (``to=a b``).
* Rendering errors are ``HarmonyError`` (a ``RuntimeError``); the reference raises a
  plain ``RuntimeError``. ``decode``/``decode_utf8`` raise ``HarmonyError`` for a
  negative id (the reference: ``OverflowError``).
* ``stop_tokens()`` lists are sorted (the reference's order is arbitrary).
* Parsed messages are shared between reads of ``StreamableParser.messages``.

Layout: :mod:`.messages` and :mod:`.content` hold the pydantic models,
:mod:`.encoding` the :class:`HarmonyEncoding`, :mod:`.stream` the
:class:`StreamableParser`, :mod:`.errors` the :class:`HarmonyError`;
:mod:`._conversion` turns the models into the core's and back; :mod:`._strict_parser`
reads tokens as openai-harmony does, :mod:`._header_reading` its headers.
"""

from .content import (
    ChannelConfig,
    Content,
    DeveloperContent,
    ReasoningEffort,
    SystemContent,
    TextContent,
    ToolDescription,
    ToolNamespaceConfig,
)
from .encoding import (
    HarmonyEncoding,
    HarmonyEncodingName,
    RenderConversationConfig,
    RenderOptions,
    load_harmony_encoding,
)
from .errors import HarmonyError
from .messages import CONSTRAIN_MARKER as CONSTRAIN_MARKER
from .messages import Author, Conversation, Message, Role
from .stream import StreamableParser, StreamState

__all__ = [
    "Author",
    "ChannelConfig",
    "Content",
    "Conversation",
    "DeveloperContent",
    "HarmonyEncoding",
    "HarmonyEncodingName",
    "HarmonyError",
    "Message",
    "ReasoningEffort",
    "RenderConversationConfig",
    "RenderOptions",
    "Role",
    "StreamState",
    "StreamableParser",
    "SystemContent",
    "TextContent",
    "ToolDescription",
    "ToolNamespaceConfig",
    "load_harmony_encoding",
]
