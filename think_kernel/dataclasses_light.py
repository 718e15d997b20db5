"""``@dataclass`` that compiles fewer functions per class (issue 17).

The standard decorator writes the source of ``__init__``, ``__repr__``, ``__eq__`` and, for a
frozen class, ``__hash__``, ``__setattr__`` and ``__delattr__``, and compiles each with
``exec`` when the class is defined. With ~90 dataclasses in the agent's modules that was about
half of the runtime's import time (~100 ms of ~190 ms on a 2-core machine), paid by the
first ``%%think`` of every kernel. Here :mod:`dataclasses` generates ``__init__`` (and, for
a frozen class, its ``__setattr__`` and ``__delattr__``: the fields are then set at C speed
and assignments fail exactly as with the standard decorator); ``__repr__``, ``__eq__`` and
``__hash__`` are shared functions that read the class's fields, with the same behaviour:

- ``__repr__``: ``Name(a=1, b='x')`` over the fields with ``repr=True`` (recursion-safe);
- ``__eq__``: same class and equal values of the ``compare=True`` fields, else
  ``NotImplemented``; ``eq=False`` keeps identity;
- ``__hash__``: a frozen class with ``eq`` hashes by those fields; a non-frozen one with
  ``eq`` is unhashable, as with the standard decorator.

So one function is compiled for a plain class instead of three, three for a frozen one
instead of six. (Sharing the frozen ``__setattr__`` too, a field set through it cost ~1 us
more per field, which the ~200 stream chunks of a token burst felt: ~2 ms.)

Everything else is the standard machinery (``fields()``, ``replace()``, ``asdict()``, slots,
defaults, ``__post_init__``, ``__match_args__``, pickling). ``order`` and ``unsafe_hash`` are
not supported (nothing here uses them). Type checkers see the standard decorator.
"""

from __future__ import annotations

import dataclasses
import operator
import reprlib
from typing import TYPE_CHECKING, Any

__all__ = ["dataclass"]


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    shown = type(self).__record_repr__
    return f"{type(self).__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in shown)})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    key = type(self).__record_key__
    return key(self) == key(other)


def _hash(self: Any) -> int:
    return hash(type(self).__record_key__(self))


def _no_fields(self: Any) -> tuple[()]:
    return ()


def _process(cls: type, repr: bool, eq: bool, frozen: bool, slots: bool, kw: dict) -> type:
    explicit_hash = "__hash__" in cls.__dict__ and not (
        cls.__dict__["__hash__"] is None and "__eq__" in cls.__dict__
    )
    own_repr, own_eq = "__repr__" in cls.__dict__, "__eq__" in cls.__dict__
    # A frozen class keeps the standard __init__, __setattr__ and __delattr__ (three compiled
    # functions): its fields are set at C speed, and assignments fail exactly as they do.
    new: Any = dataclasses.dataclass(cls, repr=False, eq=False, frozen=frozen, slots=slots, **kw)
    fields = dataclasses.fields(new)
    new.__record_repr__ = tuple(f.name for f in fields if f.repr)
    compared = [f.name for f in fields if f.compare]
    # The fields' values in one C call (one name: the value itself, which compares the same).
    new.__record_key__ = operator.attrgetter(*compared) if compared else _no_fields
    if repr and not own_repr:
        new.__repr__ = _repr
    if eq and not own_eq:
        new.__eq__ = _eq
    if eq and not explicit_hash:
        new.__hash__ = _hash if frozen else None
    return new  # type: ignore[no-any-return]


def _dataclass(
    cls: type | None = None,
    /,
    *,
    repr: bool = True,
    eq: bool = True,
    frozen: bool = False,
    slots: bool = False,
    **kw: Any,
) -> Any:
    if kw.get("order") or kw.get("unsafe_hash"):
        raise TypeError("order and unsafe_hash are not supported: use dataclasses.dataclass")

    def wrap(c: type) -> type:
        return _process(c, repr, eq, frozen, slots, kw)

    return wrap if cls is None else wrap(cls)


if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
else:
    dataclass = _dataclass
