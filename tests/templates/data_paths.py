"""Where the template tests find their data: the 63 real chat templates and the parse
cases, copied into ``tests/templates/data`` (``$OPENCHATML_TEMPLATES`` and
``$OPENCHATML_CASES`` point elsewhere)."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

DATA = Path(__file__).parent / "data"
TEMPLATES = Path(os.environ.get("OPENCHATML_TEMPLATES", DATA / "templates"))
CASES = Path(os.environ.get("OPENCHATML_CASES", DATA / "template-parse-cases.json"))

CASE_RESULTS: dict[str, list[int]] = defaultdict(lambda: [0, 0])
"""Template → [passed, run] of the parse cases run (printed at the end of the run)."""
