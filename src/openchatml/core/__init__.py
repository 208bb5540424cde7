"""The sans-IO codec every other layer stands on: messages, tokens, rendering, parsing.

Nothing here reads a socket, a file outside the vocabulary, or the clock. The public
names are re-exported from :mod:`openchatml` (and the openai-harmony compatible API from
:mod:`openchatml.harmony`); import them from there.
"""
