"""What a browser action gives back: :class:`BrowserResult`, and :class:`BrowserError`.

The tool never lets an exception escape: a failed action is a result whose ``error`` names
the kind of failure and whose ``text`` is the message the model reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class BrowserErrorKind(StrEnum):
    """Why an action failed, and who is at fault (the model's call, the backend, the state)."""

    UNKNOWN_ACTION = "unknown_action"
    """The model called something other than ``search``, ``open`` or ``find``."""
    BAD_ARGUMENTS = "bad_arguments"
    """An argument is missing or of the wrong type."""
    NO_PAGE = "no_page"
    """A page was asked for before any was opened."""
    UNKNOWN_CURSOR = "unknown_cursor"
    """The cursor names no page of the stack."""
    UNKNOWN_LINK = "unknown_link"
    """The link id is not on the page."""
    BAD_LOCATION = "bad_location"
    """``loc`` is past the page's last line."""
    NOT_SEARCHABLE = "not_searchable"
    """``find`` on a search results or find results page."""
    NO_RESULTS = "no_results"
    """A search found nothing."""
    BACKEND = "backend"
    """The search backend failed (fetch error, API error, document not found)."""
    BAD_STATE = "bad_state"
    """A stored browser state could not be read."""
    STACK_FULL = "stack_full"
    """The page stack holds as many pages (or as much text) as one conversation may."""


class BrowserError(Exception):
    """A failed browser action: ``kind`` and the message shown to the model."""

    def __init__(self, kind: BrowserErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True, slots=True)
class BrowserResult:
    """The text the model sees after ``browser.{action}``; ``error`` is set when it failed.

    ``cursor``, ``url`` and ``title`` describe the page shown (``-1``/empty on error).
    """

    text: str
    error: BrowserErrorKind | None = None
    cursor: int = -1
    url: str = ""
    title: str = ""

    @property
    def ok(self) -> bool:
        """Whether the action succeeded."""
        return self.error is None
