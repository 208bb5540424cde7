"""A :class:`~openchatml.templates.model_tokenizer.ModelTokenizer` of one id per character,
for tests that need to say exactly which ids a model samples.

A character's id is its code point; the markers are added after the last code point
(``0x110000`` on), and ``encode`` reads a spelled marker as its id, as a tokenizer does.
:meth:`CharTokenizer.spell` gives the ordinary ids of a text: one per character, so a
marker it spells stays characters (what a model may sample).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

FIRST_MARKER = 0x110000


class CharTokenizer:
    """One id per character; ``markers`` added from :data:`FIRST_MARKER` on, in order."""

    bos_token = ""
    eos_token = ""

    def __init__(
        self,
        markers: Sequence[str],
        *,
        chat_template: str | None = None,
        stops: Sequence[str] = (),
    ) -> None:
        added = {m: FIRST_MARKER + k for k, m in enumerate(dict.fromkeys(markers))}
        self.markers: Mapping[str, int] = {m: added[m] for m in sorted(added, key=len, reverse=True)}
        self._text = {i: m for m, i in added.items()}
        self._pattern = re.compile("|".join(re.escape(m) for m in self.markers)) if added else None
        self.vocab_size = FIRST_MARKER + len(added)
        self.chat_template = chat_template
        self.stop_token_ids = tuple(added[s] for s in stops)

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        at = 0
        for match in self._pattern.finditer(text) if self._pattern else ():
            ids += self.spell(text[at : match.start()])
            ids.append(self.markers[match.group()])
            at = match.end()
        return ids + self.spell(text[at:])

    def spell(self, text: str) -> list[int]:
        """The ordinary ids of ``text``: a marker it spells stays characters."""
        return [ord(c) for c in text]

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self._text[i] if i >= FIRST_MARKER else chr(i) for i in ids)

    def token_bytes(self, token: int) -> bytes:
        return self.decode([token]).encode()

    def is_marker(self, token: int) -> bool:
        return token >= FIRST_MARKER
