"""Which MCP servers a request may connect to, and the credentials that go with them.

Deny by default. A server is allowed when its URL lies under an allowed prefix (the
server's ``--mcp-allow URL-PREFIX``) or when the request names a configured server by
its label (label → URL, with headers from the configuration). Matching compares a URL
taken apart: scheme, host and port exactly, then the path on segment boundaries, so
``https://mcp.example.com/tools`` allows ``…/tools`` and ``…/tools/x`` but not
``…/toolsx``, ``https://mcp.example.com.evil.net/tools`` or ``http://…``. URLs that
a server could read differently from us are refused outright: userinfo, backslashes,
whitespace and control characters, non-ASCII, dot segments (``..``, ``%2e%2e``),
encoded slashes and empty segments.

Headers are credentials: :class:`SecretHeaders` never shows its values (``repr``,
``str``), no message built here contains one, and :func:`redact_tool_echo` is the form
of a request's tool a response may echo.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import unquote, urlsplit

from .errors import McpRequestError, McpServerNotAllowedError

REDACTED: Final = "<redacted>"
"""What :func:`redact_tool_echo` shows in place of a credential."""

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_HOST_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*")
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_MAX_URL_LENGTH: Final = 2048
_RESERVED_HEADERS: Final = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "upgrade",
        "te",
        "trailer",
        "proxy-authorization",
        "proxy-connection",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
    }
)
"""Headers the transport sets itself; a request may not set them."""


class SecretHeaders(Mapping[str, str]):
    """HTTP headers that are credentials: a read-only mapping (names lowercased) whose
    ``repr`` shows the names only."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, str] | None = None) -> None:
        self._items: dict[str, str] = {name.lower(): value for name, value in (items or {}).items()}

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"SecretHeaders({sorted(self._items)!r})"

    __str__ = __repr__

    def merged(self, other: Mapping[str, str]) -> SecretHeaders:
        """These headers with ``other``'s added (``other`` wins on the same name)."""
        return SecretHeaders({**self._items, **{name.lower(): value for name, value in other.items()}})


def check_headers(headers: Any, *, param: str = "headers") -> SecretHeaders:
    """``headers`` (a JSON object of strings, or ``None``) checked and wrapped.

    Raises :class:`McpRequestError` naming the header, never its value.
    """
    if headers is None:
        return SecretHeaders()
    if not isinstance(headers, Mapping):
        raise McpRequestError("headers must be an object of strings", param=param)
    for name, value in headers.items():
        if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
            raise McpRequestError(f"invalid header name {str(name)[:64]!r}", param=param)
        if not isinstance(value, str) or any(ch in value for ch in "\r\n\0"):
            raise McpRequestError(f"the value of header {name!r} must be a string on one line", param=param)
        if name.lower() in _RESERVED_HEADERS:
            raise McpRequestError(
                f"header {name!r} is set by the MCP transport and may not be given", param=param
            )
    return SecretHeaders(headers)


@dataclass(frozen=True, slots=True)
class ServerAddress:
    """A server URL taken apart for matching: scheme, host, port, decoded path segments."""

    scheme: str
    host: str
    port: int
    segments: tuple[str, ...]
    has_query: bool = False

    @classmethod
    def parse(cls, url: str) -> ServerAddress:
        """``url`` taken apart; raises ``ValueError`` (a reason without the URL) if unsafe."""
        if len(url) > _MAX_URL_LENGTH:
            raise ValueError("the URL is too long")
        if not url.isascii() or any(ord(ch) <= 0x20 or ord(ch) == 0x7F for ch in url) or "\\" in url:
            raise ValueError("the URL holds whitespace, control, backslash or non-ASCII characters")
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS:
            raise ValueError("the URL's scheme must be http or https")
        if "@" in parts.netloc:
            raise ValueError("the URL holds credentials (user@host): send them in headers")
        host = (parts.hostname or "").rstrip(".")
        if ":" in host:
            try:
                host = ipaddress.IPv6Address(host).compressed
            except ValueError:
                raise ValueError("the URL's host is not a valid IPv6 address") from None
        elif not _HOST_NAME.fullmatch(host):
            raise ValueError("the URL's host is not a valid host name")
        try:
            port = parts.port or _DEFAULT_PORTS[scheme]
        except ValueError:
            raise ValueError("the URL's port is not valid") from None
        return cls(scheme, host, port, _path_segments(parts.path), bool(parts.query or parts.fragment))

    def within(self, prefix: ServerAddress) -> bool:
        """Whether this address lies under ``prefix``: same origin, path on segment boundaries."""
        return (
            self.scheme == prefix.scheme
            and self.host == prefix.host
            and self.port == prefix.port
            and self.segments[: len(prefix.segments)] == prefix.segments
        )

    def display(self) -> str:
        """The origin and path, without query: safe to show in an error message."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}/" + "/".join(self.segments)


def _path_segments(path: str) -> tuple[str, ...]:
    """The decoded segments of ``path``; raises ``ValueError`` on dot, empty or slash-holding ones."""
    trimmed = path.removeprefix("/").removesuffix("/")
    if not trimmed:
        return ()
    segments = []
    for raw in trimmed.split("/"):
        segment = unquote(raw)
        if segment in ("", ".", "..") or "/" in segment or "\\" in segment:
            raise ValueError("the URL's path holds an empty, dot or encoded-slash segment")
        segments.append(segment)
    return tuple(segments)


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """A server configured by label: its URL, headers (credentials) and description."""

    label: str
    url: str
    headers: SecretHeaders = field(default_factory=SecretHeaders, repr=False)
    description: str | None = None


@dataclass(frozen=True, slots=True)
class McpEndpoint:
    """Where to connect for one request's ``mcp`` tool: the URL and the headers to send."""

    label: str
    url: str
    headers: SecretHeaders = field(default_factory=SecretHeaders, repr=False)

    @property
    def display_url(self) -> str:
        """The URL without userinfo or query, for messages and provenance."""
        return ServerAddress.parse(self.url).display()


class McpPolicy:
    """Deny-by-default rules: allowed URL prefixes and servers configured by label.

    Raises ``ValueError`` on a prefix or configured URL that does not parse (a
    configuration error).
    """

    __slots__ = ("_prefixes", "_servers")

    def __init__(self, allow_prefixes: Iterable[str] = (), servers: Iterable[McpServerConfig] = ()) -> None:
        self._prefixes: tuple[ServerAddress, ...] = tuple(_parse_prefix(p) for p in allow_prefixes)
        self._servers: dict[str, McpServerConfig] = {}
        for server in servers:
            ServerAddress.parse(server.url)
            self._servers[server.label] = server

    @property
    def allows_any(self) -> bool:
        """Whether any server at all may be connected to."""
        return bool(self._prefixes or self._servers)

    def configured(self, label: str) -> McpServerConfig | None:
        """The server configured under ``label``, if any."""
        return self._servers.get(label)

    def resolve(self, label: str, server_url: str | None, headers: SecretHeaders) -> McpEndpoint:
        """The endpoint a request's tool may connect to, or :class:`McpServerNotAllowedError`.

        Without ``server_url`` the label must be configured; with it, the URL must be the
        configured one of that label (configured headers are sent, the request's added)
        or lie under an allowed prefix (only the request's headers are sent).
        """
        configured = self._servers.get(label)
        if server_url is None:
            if configured is None:
                raise McpServerNotAllowedError(
                    f"no MCP server is configured under the label {label!r}; give its server_url",
                    param="server_label",
                )
            return McpEndpoint(label, configured.url, configured.headers.merged(headers))
        try:
            address = ServerAddress.parse(server_url)
        except ValueError as exc:
            raise McpServerNotAllowedError(f"server_url is refused: {exc}", param="server_url") from None
        if configured is not None and server_url == configured.url:
            return McpEndpoint(label, configured.url, configured.headers.merged(headers))
        if any(address.within(prefix) for prefix in self._prefixes):
            return McpEndpoint(label, server_url, headers)
        raise McpServerNotAllowedError(
            f"connecting to the MCP server at {address.display()} is not allowed: this server connects "
            "only to the URL prefixes its operator allows (--mcp-allow) and to servers configured by label",
            param="server_url",
        )


def _parse_prefix(prefix: str) -> ServerAddress:
    """An allowed prefix taken apart; it may hold no query or fragment."""
    address = ServerAddress.parse(prefix)
    if address.has_query:
        raise ValueError(f"an MCP URL prefix may not hold a query or fragment: {address.display()}")
    return address


def redact_tool_echo(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a request's ``mcp`` tool fit to echo: header values and ``authorization``
    replaced by :data:`REDACTED`, userinfo dropped from ``server_url``."""
    echo = dict(tool)
    headers = echo.get("headers")
    if isinstance(headers, Mapping):
        echo["headers"] = dict.fromkeys(headers, REDACTED)
    elif headers is not None:
        echo["headers"] = REDACTED
    if echo.get("authorization") is not None:
        echo["authorization"] = REDACTED
    url = echo.get("server_url")
    if isinstance(url, str) and "@" in url:
        echo["server_url"] = _without_userinfo(url)
    return echo


def _without_userinfo(url: str) -> str:
    """``url`` with anything before an ``@`` in its authority removed."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority = rest[:end].rpartition("@")[2]
    return f"{scheme}://{authority}{rest[end:]}"
