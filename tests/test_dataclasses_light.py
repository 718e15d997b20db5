"""think_kernel.dataclasses_light behaves like the standard ``@dataclass`` for what we use."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import InitVar, field
from typing import Any, ClassVar

import pytest

from think_kernel.dataclasses_light import dataclass as light


def shapes(dc: Any) -> dict[str, type]:
    """The same classes, made by ``dc`` (the standard decorator or ours)."""

    @dc(frozen=True, slots=True)
    class Base:
        type: ClassVar[str] = "base"
        a: str
        b: int = 0

    @dc(frozen=True, slots=True)
    class Child(Base):
        type: ClassVar[str] = "child"
        c: list[int] = field(default_factory=list)

    @dc(frozen=True)
    class Frozen:
        x: int
        y: str = "y"

    @dc
    class Plain:
        x: int
        items: dict[str, int] = field(default_factory=dict)

    @dc(eq=False)
    class Ident:
        x: int

    @dc(frozen=True)
    class Derived:
        x: int
        twice: int = field(init=False, repr=False)
        seed: InitVar[int] = 1

        def __post_init__(self, seed: int) -> None:
            object.__setattr__(self, "twice", 2 * self.x * seed)

    @dc
    class Own:
        x: int

        def __repr__(self) -> str:
            return "own"

    return {k: v for k, v in locals().items() if isinstance(v, type)}


STD, OURS = shapes(dataclasses.dataclass), shapes(light)


# Pickling needs module-level classes.
@light(frozen=True, slots=True)
class PickledSlots:
    a: str
    b: int = 3


@light(frozen=True)
class PickledDict:
    a: str


def both(name: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    return STD[name](*args, **kwargs), OURS[name](*args, **kwargs)


def test_repr_eq_hash_match_the_standard_decorator() -> None:
    for name, args in [("Base", ("a",)), ("Child", ("a", 2, [1])), ("Frozen", (1,)),
                       ("Plain", (1, {"k": 2})), ("Derived", (3,)), ("Own", (1,))]:  # fmt: skip
        std, ours = both(name, *args)
        assert repr(ours) == repr(std)
        assert (ours == OURS[name](*args)) is (std == STD[name](*args)) is True
        assert ours != std  # another class: NotImplemented both ways, then identity
    assert hash(OURS["Base"]("a", 1)) == hash(OURS["Base"]("a", 1))
    assert OURS["Base"]("a", 1) != OURS["Base"]("a", 2)
    assert OURS["Child"]("a") != OURS["Base"]("a")  # a subclass is another class
    with pytest.raises(TypeError):
        hash(OURS["Plain"](1))  # eq without frozen: unhashable, as with dataclass
    i1, i2 = OURS["Ident"](1), OURS["Ident"](1)
    assert i1 != i2 and len({i1, i2}) == 2  # eq=False: identity
    assert OURS["Derived"](3, seed=2).twice == 12 and "twice" not in repr(OURS["Derived"](3))


def test_frozen_fields_are_set_once() -> None:
    for name in ("Base", "Frozen"):
        obj = OURS[name](1) if name == "Frozen" else OURS[name]("a")
        field_name = "x" if name == "Frozen" else "a"
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, field_name, 2)
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(obj, field_name)
    for name, arg in (("Frozen", 1), ("Base", "a")):  # an attribute that is no field
        raised = []
        for made in (STD, OURS):
            with pytest.raises(Exception) as info:
                made[name](arg).other = 1
            raised.append(type(info.value))
        assert raised[0] is raised[1]  # (3.11's frozen slots classes raise a TypeError here)
    plain = OURS["Plain"](1)
    plain.x = 2  # not frozen: assignable
    assert plain.x == 2
    # __init__ keeps the generated signature and errors.
    for name in ("Base", "Frozen", "Derived"):
        obj = OURS[name](1) if name != "Base" else OURS[name]("a")
        assert type(obj) is OURS[name]
        assert inspect.signature(OURS[name]) == inspect.signature(STD[name])
    with pytest.raises(TypeError):
        OURS["Base"]()  # missing 'a', as with the standard decorator


def test_standard_helpers_work() -> None:
    child = OURS["Child"]("a", 2, [1])
    assert [f.name for f in dataclasses.fields(child)] == ["a", "b", "c"]
    assert dataclasses.replace(child, b=5) == OURS["Child"]("a", 5, [1])
    assert dataclasses.asdict(child) == {"a": "a", "b": 2, "c": [1]}
    assert dataclasses.is_dataclass(child) and child.type == "child"
    assert not hasattr(child, "__dict__")  # slots kept
    assert OURS["Child"].__match_args__ == STD["Child"].__match_args__
    assert OURS["Child"]("a").c is not OURS["Child"]("a").c  # default_factory per instance


def test_copy_and_pickle() -> None:
    for obj in (PickledSlots("x"), PickledDict("y")):
        assert pickle.loads(pickle.dumps(obj)) == obj
        assert copy.copy(obj) == obj and copy.deepcopy(obj) == obj
        clone = copy.copy(obj)
        with pytest.raises(dataclasses.FrozenInstanceError):
            clone.a = "changed"


def test_recursive_repr_and_unsupported_options() -> None:
    plain = OURS["Plain"](1)
    plain.items["me"] = plain  # type: ignore[assignment]
    assert "..." in repr(plain)
    with pytest.raises(TypeError):
        light(order=True)(type("X", (), {"__annotations__": {"x": "int"}}))


def test_frozen_setattr_is_shared_code_and_behaves_as_the_standard() -> None:
    """Issue 17: a frozen class's __setattr__ / __delattr__ are closures of one compiled
    function each (not compiled per class), and refuse or allow exactly what the standard
    ones do, also in a plain subclass (whose own attributes may be set)."""
    import think_kernel.dataclasses_light as dl

    if dl._STD_FROZEN is None:  # a Python whose dataclasses differ: the standard ones are used
        assert OURS["Frozen"].__setattr__.__code__.co_filename == "<string>"
        return
    codes = {OURS[n].__setattr__.__code__ for n in ("Base", "Child", "Frozen", "Derived")}
    assert codes == {dl._frozen_get_del_attr(object, [], None)[0].__code__}
    assert OURS["Frozen"].__setattr__.__qualname__ == STD["Frozen"].__setattr__.__qualname__
    assert dataclasses._frozen_get_del_attr is dl._STD_FROZEN  # put back after each class
    for made in (STD, OURS):
        sub = type("Sub", (made["Frozen"],), {})(1)
        sub.note = "a subclass's own attribute"  # allowed, as with the standard decorator
        del sub.note
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'x'"):
            sub.x = 2
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'y'"):
            del sub.y
