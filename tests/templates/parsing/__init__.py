"""Tests of the template output parser, one file per module of ``openchatml.templates.parsing``."""
