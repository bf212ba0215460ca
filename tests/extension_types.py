"""Python extension types with metadata, for the tests of extension columns: each a
subclass of :class:`TaggedExtension` with its own name (the tests that read a file in
a fresh interpreter rely on a name registered only where its module is imported)."""
from __future__ import annotations

import pyarrow as pa


class TaggedExtension(pa.ExtensionType):
    """An extension type over any storage whose serialized metadata is its ``tag``."""

    NAME = ""
    DEFAULT_TAG = ""

    def __init__(self, storage: pa.DataType, tag: str | None = None):
        self.tag = self.DEFAULT_TAG if tag is None else tag
        super().__init__(storage, self.NAME)

    def __arrow_ext_serialize__(self):
        return self.tag.encode()

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return cls(storage_type, serialized.decode())


def register(cls: type) -> type:
    """Register ``cls`` with pyarrow (once per process) and return it."""
    instance = cls.__new__(cls)
    TaggedExtension.__init__(instance, pa.int8())  # (whatever argument order a subclass's own __init__ takes)
    try:
        pa.register_extension_type(instance)
    except pa.ArrowKeyError:  # (registered by an earlier import)
        pass
    return cls
