"""The Open Responses API below HTTP: the typed wire (:mod:`.wire`: items, tools, the
response resource and streaming events, in the ``openresponses`` and ``openai``
dialects), a request checked into :class:`~.request.ResponseRequest`, items ⇄ messages
(:mod:`.input`), the model's dialect (:mod:`.dialect`: Harmony or a chat template), the
event builder (:mod:`.stream`), replay of stored responses (:mod:`.replay`) and the
bounds every request is held to (:mod:`.limits`).
"""
