"""rcfmt.runtime.records: a record behaves as the dataclass it replaces, for the subset of
``dataclass`` it keeps (checked side by side with ``dataclasses`` on random classes)."""
from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from functools import cached_property
from typing import ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rcfmt.runtime import records
from rcfmt.runtime.records import FrozenRecordError, field, fields, record, replace

VALUES = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", ""]), st.none(), st.tuples(st.integers(0, 2)))


@st.composite
def class_specs(draw):
    """Fields as (name, has_default, default, repr, compare), defaults after the others,
    and the decorator's options."""
    n = draw(st.integers(0, 5))
    first_default = draw(st.integers(0, n))
    specs = [(f"f{i}", i >= first_default, draw(VALUES), draw(st.booleans()), draw(st.booleans()))
             for i in range(n)]
    options = dict(frozen=draw(st.booleans()), eq=draw(st.booleans()), repr=draw(st.booleans()))
    return specs, options


def _declare(decorate, make_field, specs, options, name="Point"):
    namespace = {"__annotations__": {}, "__qualname__": name}
    for fname, has_default, default, show, compare in specs:
        namespace["__annotations__"][fname] = "object"
        if has_default or not (show and compare):
            kwargs = {"default": default} if has_default else {}
            namespace[fname] = make_field(repr=show, compare=compare, **kwargs)
    return decorate(**options)(type(name, (), namespace))


def _pair(specs, options):
    return (_declare(dataclasses.dataclass, dataclasses.field, specs, options),
            _declare(record, field, specs, options))


@settings(max_examples=200, deadline=None)
@given(spec=class_specs(), data=st.data())
def test_a_record_behaves_as_the_dataclass_it_replaces(spec, data):
    specs, options = spec
    dc, rec = _pair(specs, options)
    assert inspect.signature(rec.__init__) == inspect.signature(dc.__init__)
    assert fields(rec) == tuple(f.name for f in dataclasses.fields(dc))
    required = [s[0] for s in specs if not s[1]]
    args_a = {n: data.draw(VALUES) for n in required}
    args_b = {n: data.draw(VALUES) for n in required}
    pairs = [(dc(**a), rec(**a)) for a in (args_a, args_b)]
    for d, r in pairs:
        assert [getattr(r, n) for n in fields(r)] == [getattr(d, f.name) for f in dataclasses.fields(d)]
        if options["repr"]:  # (else object's repr, which holds the address)
            assert repr(r) == repr(d)
    (d1, r1), (d2, r2) = pairs
    assert (r1 == r2) == (d1 == d2) and (r1 != r2) == (d1 != d2) and (r1 == r1) == (d1 == d1)
    assert (rec.__hash__ is None) == (dc.__hash__ is None)
    if options["eq"] and options["frozen"]:  # (equal records hash alike)
        assert hash(r1) == hash(rec(**args_a)) and hash(d1) == hash(dc(**args_a))
    if specs:
        name, value = specs[0][0], data.draw(VALUES)
        if options["frozen"]:
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(d1, name, value)
            with pytest.raises(FrozenRecordError):
                setattr(r1, name, value)
            with pytest.raises(AttributeError):
                delattr(r1, name)
        else:
            setattr(r1, name, value)
            assert getattr(r1, name) == value
        changed_d, changed_r = dataclasses.replace(d2, **{name: value}), replace(r2, **{name: value})
        assert [getattr(changed_r, n) for n in fields(rec)] == [getattr(changed_d, n) for n in fields(rec)]


def test_repr_and_equality_read_only_the_fields_they_are_given():
    @record(frozen=True)
    class Leaf:
        name: str
        scalar: object = field(default=None, compare=False)
        cache: dict = field(default_factory=dict, repr=False, compare=False)

    a, b = Leaf("x", 1), Leaf("x", 2)
    assert a == b and hash(a) == hash(b) and a != Leaf("y", 1)
    assert repr(a) == "test_repr_and_equality_read_only_the_fields_they_are_given.<locals>.Leaf(name='x', scalar=1)"
    assert a.cache == {} and a.cache is not b.cache  # (a fresh default per instance)
    assert (a == "x") is False and a.__eq__("x") is NotImplemented  # (other classes are not equal)


def test_fields_follow_the_bases_then_the_class_as_dataclasses_order_them():
    def declare(decorate, make_field):
        @decorate(frozen=True)
        class Base:
            a: int
            b: int = 1

        class Middle(Base):  # (not a record itself: its annotations are no fields)
            m: ClassVar[int] = 5

        @decorate(frozen=True)
        class Child(Middle):
            c: int = 2
            b: int = 3  # (a base's field redeclared keeps its place, takes the new default)
            kind: ClassVar[str] = "child"

        return Child

    dc, rec = declare(dataclasses.dataclass, dataclasses.field), declare(record, field)
    assert fields(rec) == tuple(f.name for f in dataclasses.fields(dc)) == ("a", "b", "c")
    assert inspect.signature(rec.__init__) == inspect.signature(dc.__init__)
    assert rec(0) == rec(0, 3, 2) and rec.kind == "child" and rec.m == 5


def test_post_init_runs_on_construction_and_on_replace():
    @record(frozen=True)
    class Span:
        lo: int
        hi: int

        def __post_init__(self):
            if self.lo > self.hi:
                raise ValueError("lo > hi")
            object.__setattr__(self, "width", self.hi - self.lo)

    assert Span(1, 4).width == 3 and replace(Span(1, 4), hi=9).width == 8
    with pytest.raises(ValueError, match="lo > hi"):
        replace(Span(1, 4), lo=5)


def test_methods_of_the_class_body_are_kept():
    @record(frozen=True)
    class Named:
        name: str

        def __repr__(self):
            return f"<{self.name}>"

        def __eq__(self, other):
            return isinstance(other, Named) and self.name.lower() == other.name.lower()

        def __hash__(self):
            return hash(self.name.lower())

    assert repr(Named("A")) == "<A>" and Named("A") == Named("a") and hash(Named("A")) == hash(Named("a"))

    @record
    class EqOnly:  # (a body defining __eq__ alone: unhashable, as Python makes it)
        x: int

        def __eq__(self, other):
            return True

    assert EqOnly.__hash__ is None


def test_cached_properties_pickles_and_copies_of_frozen_records():
    got = Frozen(3, ("a",))
    assert got.double == 6 and got.double == 6  # (cached_property writes the instance dict directly)
    for clone in (pickle.loads(pickle.dumps(got)), copy.copy(got), copy.deepcopy(got)):
        assert clone == got and clone is not got and type(clone) is Frozen


@record(frozen=True)
class Frozen:
    n: int
    tags: tuple = ()

    @cached_property
    def double(self) -> int:
        return 2 * self.n


def test_a_plain_subclass_of_a_frozen_record_sets_only_attributes_of_its_own():
    def declare(decorate):
        @decorate(frozen=True)
        class Base:
            n: int

        class Sub(Base):
            pass

        return Base, Sub

    for base, sub in (declare(dataclasses.dataclass), declare(record)):
        got = sub(1)
        got.extra = 2  # (dataclasses allow it: the subclass is not frozen itself)
        assert got.extra == 2
        del got.extra
        with pytest.raises(AttributeError):
            got.n = 3
        with pytest.raises(AttributeError):
            base(1).extra = 2


def test_misuse_is_refused():
    with pytest.raises(TypeError, match="'b' without a default follows one with a default"):
        @record
        class Bad:
            a: int = 1
            b: int

    with pytest.raises(TypeError, match="default or a default_factory"):
        field(default=1, default_factory=list)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'n'"):
        Frozen()
    with pytest.raises(TypeError, match="no field 'm'"):
        replace(Frozen(1), m=2)
    with pytest.raises(TypeError, match="not a record"):
        fields(object())


def test_a_record_costs_a_fraction_of_a_dataclass_to_declare():
    """(Counted, not timed: a record compiles one method, a frozen dataclass six.)"""
    compiled = []

    def counting_exec(source, *args):
        compiled.append(source)
        return exec(source, *args)

    spec = ([("a", False, None, True, True), ("b", True, 1, True, True)], dict(frozen=True, eq=True, repr=True))
    records.exec = counting_exec
    try:
        _declare(record, field, *spec)
    finally:
        del records.exec
    assert len(compiled) == 1 and compiled[0].startswith("def __init__(self, a, b=_d_b):")
