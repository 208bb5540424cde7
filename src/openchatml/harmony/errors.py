"""The error of the openai-harmony API, and core errors raised through it.

:class:`HarmonyError` derives from :class:`~openchatml.core.errors.OCMError` (and from
``RuntimeError``, like the reference's). A core error raised through this API is an
instance of both its own class and ``HarmonyError`` (:func:`as_harmony`), keeping its
``code`` and ``position``.
"""

from __future__ import annotations

from typing import Any, cast

from ..core.errors import BY_CODE, OCMError, Position


class HarmonyError(OCMError, RuntimeError):
    """An error raised through the openai-harmony API.

    Raised as is for this package's own checks (text naming a disallowed special token
    in :meth:`HarmonyEncoding.encode`, ids that do not decode); core errors raised here
    are instances of their own class and of this one.
    """

    code = "E-HARMONY"
    fault = "caller"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore_error, (self.code, self.message, self.position))


_AS_HARMONY: dict[type[OCMError], type[HarmonyError]] = {}


def _harmony_class(cls: type[OCMError]) -> type[HarmonyError]:
    """``cls`` mixed with :class:`HarmonyError`, keeping ``cls``'s code, fault and status."""
    if issubclass(cls, HarmonyError):
        return cls
    mixed = _AS_HARMONY.get(cls)
    if mixed is None:
        attrs = {
            "__module__": __name__,
            "__qualname__": cls.__qualname__,
            "__doc__": cls.__doc__,
            "code": cls.code,
            "fault": cls.fault,
            "http_status": cls.http_status,
            "error_type": cls.error_type,
        }
        mixed = _AS_HARMONY[cls] = cast(type[HarmonyError], type(cls.__name__, (cls, HarmonyError), attrs))
    return mixed


def as_harmony(exc: OCMError) -> HarmonyError:
    """``exc`` as an instance of its own class and of :class:`HarmonyError`."""
    if isinstance(exc, HarmonyError):
        return exc
    out = _harmony_class(type(exc))(exc.message, position=exc.position)
    return out.with_traceback(exc.__traceback__)


def _restore_error(code: str, message: str, position: Position | None) -> HarmonyError:
    """Rebuild a pickled :class:`HarmonyError` from its code, message and position."""
    base = BY_CODE.get(code)
    cls = _harmony_class(base) if base is not None else HarmonyError
    return cls(message, position=position)
