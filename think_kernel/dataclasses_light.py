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

A frozen class's ``__setattr__`` and ``__delattr__`` (which only refuse: ``__init__`` sets
the fields with ``object.__setattr__``) are closures over the class and its field names, with
the standard code, not compiled anew for each class. So one function is compiled for a
class instead of three (frozen: six), ~0.14 ms apiece here: 47 frozen and 24 plain classes
on the first ``%%think``'s way. (A shared ``__setattr__`` that ``__init__`` went through,
tried before, cost ~1 us more per field, which the ~200 stream chunks of a token burst felt:
~2 ms. These are not on ``__init__``'s way.)

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


def _frozen_get_del_attr(cls: Any, fields: list[Any], globals: Any) -> tuple[Any, Any]:
    """What ``dataclasses._frozen_get_del_attr`` returns, as closures (nothing compiled)."""
    names = tuple(f.name for f in fields)
    frozen_error = dataclasses.FrozenInstanceError

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise frozen_error(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise frozen_error(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __setattr__, __delattr__


#: The standard helper, replaced while one of our frozen classes is made; only where it has
#: the shape (3.11, 3.12) our closures stand in for: elsewhere the standard one is used.
_STD_FROZEN: Any = getattr(dataclasses, "_frozen_get_del_attr", None)
if _STD_FROZEN is not None and _STD_FROZEN.__code__.co_varnames[:3] != ("cls", "fields", "globals"):
    _STD_FROZEN = None


def _standard(cls: type, frozen: bool, slots: bool, kw: dict) -> Any:
    swap = frozen and _STD_FROZEN is not None
    if swap:  # another thread making a frozen dataclass meanwhile behaves the same either way
        dataclasses._frozen_get_del_attr = _frozen_get_del_attr  # type: ignore[attr-defined]
    try:
        return dataclasses.dataclass(cls, repr=False, eq=False, frozen=frozen, slots=slots, **kw)
    finally:
        if swap:
            dataclasses._frozen_get_del_attr = _STD_FROZEN  # type: ignore[attr-defined]


def _process(cls: type, repr: bool, eq: bool, frozen: bool, slots: bool, kw: dict) -> type:
    explicit_hash = "__hash__" in cls.__dict__ and not (
        cls.__dict__["__hash__"] is None and "__eq__" in cls.__dict__
    )
    own_repr, own_eq = "__repr__" in cls.__dict__, "__eq__" in cls.__dict__
    # A frozen class keeps the standard __init__ (compiled: its fields are set at C speed);
    # assignments fail exactly as they do with the standard decorator.
    new: Any = _standard(cls, frozen, slots, kw)
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
