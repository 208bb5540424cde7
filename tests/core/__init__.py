"""Tests of ``openchatml.core``: one file per module, and the codec's cross-cutting suites."""
