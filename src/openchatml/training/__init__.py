"""Training data: conversations → token ids and a loss mask that learns only the
assistant's tokens, for Harmony / OpenChatML 2.2 and for chat-template models; records
of a training file and their formats; rows packed for a trainer."""

from .masks import MaskedSample, harmony_sample
from .packing import IGNORE_INDEX, Overflow, PackingStats, Row, pack, unpacked
from .records import RecordError, RecordFormat, record_format
from .template_masks import TemplateMaskError, template_sample

__all__ = [
    "IGNORE_INDEX",
    "MaskedSample",
    "Overflow",
    "PackingStats",
    "RecordError",
    "RecordFormat",
    "Row",
    "TemplateMaskError",
    "harmony_sample",
    "pack",
    "record_format",
    "template_sample",
    "unpacked",
]
