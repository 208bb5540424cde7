"""Chat-template analysis: a template's format (reasoning markers, content markers,
tool-call syntax, end markers, generation prompts, thinking switch) read off renders of
probe conversations (see :mod:`.template_analysis`).

``analyze(template)`` and ``analyze_source(text)`` give a
:class:`~..format.TemplateFormat`; ``preserved_tokens(fmt)`` its markers;
``clear_caches()`` empties the analysis's caches."""

from __future__ import annotations

import sys

from .preserved import preserved_tokens
from .template_analysis import analyze, analyze_source

__all__ = ["analyze", "analyze_source", "clear_caches", "preserved_tokens"]


def clear_caches() -> None:
    """Empty every ``functools`` cache defined in this package's modules (compiled
    templates, thinking-switch candidates), so that the next analysis starts cold."""
    prefix = __name__ + "."
    for module_name, module in list(sys.modules.items()):
        if module_name != __name__ and not module_name.startswith(prefix):
            continue
        for value in list(vars(module).values()):
            cache_clear = getattr(value, "cache_clear", None)
            if callable(cache_clear) and getattr(value, "__module__", None) == module_name:
                cache_clear()
