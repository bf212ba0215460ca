"""Record classes: :func:`dataclasses.dataclass`'s declarative fields at a fraction of
its import cost.

``dataclass`` compiles every method it adds (``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, ``__setattr__``, ``__delattr__``) from source with ``exec`` when the class
is created: about 0.5 ms a class on this project's machine, paid by every process on
import. The read path alone holds about forty such classes, so a one-shot lookup or
``rcfmt head`` spent 20-25 ms building them. :func:`record` compiles only ``__init__``
(about 0.07 ms), so construction costs what a dataclass's does and a wrong call fails the
same way; ``__eq__``, ``__hash__``, ``__repr__`` and the frozen ``__setattr__`` are shared
functions over the fields' values (one :func:`operator.attrgetter` a class).

The subset of ``dataclass`` kept, with its meaning unchanged:

- fields are the record bases' fields, then the class's own annotations, in order
  (``ClassVar`` annotations are not fields); a class attribute or :func:`field` gives a
  default; fields with defaults follow those without;
- ``__post_init__`` runs at the end of ``__init__``;
- a method the class body defines is never replaced;
- ``eq`` compares records of the same class by their ``compare`` fields; ``frozen`` refuses
  assignment (:class:`FrozenRecordError`, an ``AttributeError``) and hashes the ``compare``
  fields; ``eq`` without ``frozen`` makes instances unhashable;
- :func:`replace` and :func:`fields` stand in for their ``dataclasses`` namesakes.
"""
from __future__ import annotations

from operator import attrgetter
from typing import ClassVar

__all__ = ["record", "field", "replace", "fields", "FrozenRecordError"]

_MISSING = object()
_FACTORY = object()  # the __init__ default of a field built by its default_factory


class FrozenRecordError(AttributeError):
    """Assignment to, or deletion of, an attribute of a frozen record."""


class _Field:
    """A field's options, from :func:`field` (replaced by its default on the class)."""

    __slots__ = ("default", "default_factory", "repr", "compare")

    def __init__(self, default, default_factory, repr, compare):
        if default is not _MISSING and default_factory is not None:
            raise TypeError("a field takes a default or a default_factory, not both")
        self.default, self.default_factory, self.repr, self.compare = default, default_factory, repr, compare


def field(*, default=_MISSING, default_factory=None, repr: bool = True, compare: bool = True):
    """Options of one field: a default (or a function called for each instance's default),
    and whether ``repr`` shows it and ``==``/``hash`` use it."""
    return _Field(default, default_factory, repr, compare)


def fields(obj) -> tuple[str, ...]:
    """The field names of a record class or instance, in ``__init__`` order."""
    try:
        return obj.__record_fields__
    except AttributeError:
        raise TypeError(f"{obj!r} is not a record class or instance") from None


def replace(obj, **changes):
    """A new record of ``obj``'s class with ``changes`` applied to ``obj``'s field values
    (``__init__`` and ``__post_init__`` run on them, as for any instance)."""
    names = fields(obj)
    unknown = changes.keys() - set(names)
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field {sorted(unknown)[0]!r}")
    for name in names:
        if name not in changes:
            changes[name] = getattr(obj, name)
    return obj.__class__(**changes)


def _eq(self, other):
    if other.__class__ is not self.__class__:
        return NotImplemented
    values = self.__record_compared__
    return values(self) == values(other)


def _hash(self):
    return hash(self.__record_compared__(self))


def _repr(self):
    cls = self.__class__
    body = ", ".join(f"{n}={getattr(self, n)!r}" for n in cls.__record_shown__)
    return f"{cls.__qualname__}({body})"


def _frozen_setattr(self, name, value):
    # (as dataclasses: a subclass that is not a record itself may set attributes of its own)
    if "__record_specs__" in type(self).__dict__ or name in self.__record_fields__:
        raise FrozenRecordError(f"cannot assign to {name!r}: {type(self).__name__} is frozen")
    object.__setattr__(self, name, value)


def _frozen_delattr(self, name):
    if "__record_specs__" in type(self).__dict__ or name in self.__record_fields__:
        raise FrozenRecordError(f"cannot delete {name!r}: {type(self).__name__} is frozen")
    object.__delattr__(self, name)


def _values_getter(names):
    """A function from a record to the tuple of the values of ``names``."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        get = attrgetter(names[0])
        return lambda obj: (get(obj),)
    return lambda obj: ()


def _is_class_var(annotation) -> bool:
    if isinstance(annotation, str):
        return annotation.startswith(("ClassVar", "typing.ClassVar"))
    return annotation is ClassVar or getattr(annotation, "__origin__", None) is ClassVar


def _explicit_hash(own) -> bool:
    """Whether the class body defines ``__hash__`` (not the None Python sets for a class
    body that defines ``__eq__`` alone)."""
    return "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)


def _collect(cls) -> dict[str, _Field]:
    """The fields of ``cls`` by name, in order: its record bases' then its own."""
    specs: dict[str, _Field] = {}
    for base in reversed(cls.__mro__[1:]):
        specs.update(base.__dict__.get("__record_specs__", {}))
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if _is_class_var(annotation):
            continue
        value = cls.__dict__.get(name, _MISSING)
        if isinstance(value, _Field):
            spec = value
            if value.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, value.default)
        else:
            spec = _Field(value, None, True, True)
        specs[name] = spec
    with_default = False
    for name, spec in specs.items():
        if spec.default is not _MISSING or spec.default_factory is not None:
            with_default = True
        elif with_default:
            raise TypeError(f"{cls.__name__}: field {name!r} without a default follows one with a default")
    return specs


def _make_init(cls, specs: dict[str, _Field], frozen: bool):
    namespace = {"_set": object.__setattr__, "_FACTORY": _FACTORY}
    params, body = [], []
    for name, spec in specs.items():
        if spec.default_factory is not None:
            namespace[f"_f_{name}"] = spec.default_factory
            params.append(f"{name}=_FACTORY")
            body.append(f"if {name} is _FACTORY: {name} = _f_{name}()")
        elif spec.default is not _MISSING:
            namespace[f"_d_{name}"] = spec.default
            params.append(f"{name}=_d_{name}")
        else:
            params.append(name)
        body.append(f"_set(self, {name!r}, {name})" if frozen else f"self.{name} = {name}")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n    " + "\n    ".join(body or ["pass"])
    scope: dict = {}
    exec(source, namespace, scope)
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    annotations = {}
    for klass in reversed(cls.__mro__):
        annotations.update(klass.__dict__.get("__annotations__", {}))
    init.__annotations__ = {**{n: annotations[n] for n in specs}, "return": None}
    return init


def record(cls=None, /, *, frozen: bool = False, eq: bool = True, repr: bool = True):
    """Make ``cls`` a record: ``@record`` or ``@record(frozen=True, eq=False, repr=False)``.
    See the module doc for what a record is."""

    def wrap(cls):
        specs = _collect(cls)
        cls.__record_specs__ = specs
        cls.__record_fields__ = tuple(specs)
        cls.__record_shown__ = tuple(n for n, s in specs.items() if s.repr)
        cls.__record_compared__ = staticmethod(_values_getter([n for n, s in specs.items() if s.compare]))
        own = cls.__dict__
        if "__init__" not in own:
            cls.__init__ = _make_init(cls, specs, frozen)
        if repr and "__repr__" not in own:
            cls.__repr__ = _repr
        if eq and "__eq__" not in own:
            cls.__eq__ = _eq
        if frozen:
            cls.__setattr__ = _frozen_setattr
            cls.__delattr__ = _frozen_delattr
        if not _explicit_hash(own):
            if eq and frozen:
                cls.__hash__ = _hash
            elif eq:
                cls.__hash__ = None
        return cls

    return wrap if cls is None else wrap(cls)
