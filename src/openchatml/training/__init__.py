"""Training data: conversations → token ids and a loss mask that learns only the
assistant's tokens, for Harmony / OpenChatML 2.2 and for chat-template models."""

from .masks import MaskedSample, harmony_sample
from .template_masks import TemplateMaskError, template_sample

__all__ = ["MaskedSample", "TemplateMaskError", "harmony_sample", "template_sample"]
