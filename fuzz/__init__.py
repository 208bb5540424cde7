"""Long-running fuzzers: ``python fuzz/run.py`` (``make fuzz``) runs every target of
:mod:`fuzz.parsers` and :mod:`fuzz.server`."""
