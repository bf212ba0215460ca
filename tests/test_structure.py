"""The package's shape, read from the source with ``ast`` (nothing is imported):

- no import circle among modules: an import counts wherever it is written, at module
  level or inside a function (a function-level import hides a circle from Python, not
  from the design);
- no module imports another module's ``_private`` name (``from .x import _y``, or
  ``x._y`` through a module it imported): what modules share is public in the package;
- no ``.py`` file over :data:`MAX_LINES` lines, except the files of
  :data:`LONG_MODULES`, each under its ceiling; no native kernel (``.pyx``) over
  :data:`MAX_LINES` either (their text is counted, not parsed), and none that reads or
  writes Arrow offsets by width itself (``rcfmt/_native/offsets.pxd`` does, once);
- no module of rcfmt imports one of the old names kept for users (:data:`ALIASES`).

Checked for the whole package (issue 39; docs/ARCHITECTURE.md says which package may
import which). :data:`LONG_MODULES` is the one allow-list, and it can only shrink: a
file on it may not grow past its ceiling, and an entry whose file is back under
:data:`MAX_LINES` fails the test until it is removed.

An import of ``a.b.c`` counts as an edge to ``a.b.c`` alone: Python runs the parents'
``__init__`` first, but a package's ``__init__`` that re-exports its modules' names
(``rcfmt/storage/__init__.py``) is no circle as long as no module of the package
imports from it.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: the packages whose modules must pass every check
PACKAGES = ["rcfmt"]
#: the most lines a module may have
MAX_LINES = 800
#: modules over MAX_LINES today, each with the most lines it may have (its length when
#: listed) and why it is not split yet. Only remove entries or lower ceilings.
LONG_MODULES: dict[str, int] = {}
#: the layers of docs/ARCHITECTURE.md, bottom up: a module may import modules of its own
#: layer or a lower one, never a higher one. A module belongs to the layer of its longest
#: matching prefix (``rcfmt.schema.types`` is a column type, ``rcfmt.schema.nested`` the schema).
LAYERS = [
    ("base", ["rcfmt.errors", "rcfmt.runtime", "rcfmt._native",
              "rcfmt.interop.arrow", "rcfmt.interop.cdata"]),
    ("storage and codecs", ["rcfmt.storage", "rcfmt.codecs"]),
    ("column types", ["rcfmt.schema.types", "rcfmt.schema.annotated", "rcfmt.schema.statistics",
                      "rcfmt.schema.gather", "rcfmt.schema.values"]),
    ("encodings", ["rcfmt.encodings"]),
    ("schema", ["rcfmt.schema"]),
    ("predicates", ["rcfmt.predicate"]),
    ("index", ["rcfmt.index"]),
    ("format and layout", ["rcfmt.format", "rcfmt.layout"]),
    ("scan", ["rcfmt.scan"]),
    ("file", ["rcfmt.file"]),
    ("dataset", ["rcfmt.dataset"]),
    ("dataframes", ["rcfmt.interop"]),
    ("cli", ["rcfmt.cli"]),
    ("public API", ["rcfmt"]),
]
#: imports that go up a layer, each with its reason
UPWARD = {
    ("rcfmt.file.writer", "rcfmt"): "the footer's created_by names __version__, kept in the package's root",
}
#: old module names kept for users (``sys.modules`` aliases of the new module): code in
#: rcfmt imports the module itself
ALIASES = ["rcfmt.polars", "rcfmt.pandas_io"]


def modules_of(root: Path, top: str = "rcfmt") -> dict[str, Path]:
    """Every ``.py`` module below ``root / top``: dotted name -> file (a package's
    ``__init__.py`` under the package's name)."""
    out = {}
    for path in sorted((root / top).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _package_of(name: str, path: Path) -> str:
    """The package a module's relative imports start from."""
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _parse(path: Path) -> ast.Module:
    """``ast.parse`` of the file, retried when CPython 3.11's AST recursion guard, shared
    by threads (gh-106905), trips because another thread (a test server's) used the AST
    machinery at the same time."""
    for attempt in range(5):
        try:
            return ast.parse(path.read_text(), filename=str(path))
        except SystemError:
            if attempt == 4:
                raise
    raise AssertionError("unreachable")


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, str | None, int]]:
    """What the module ``name`` imports from the modules of ``modules``, wherever the
    import is written: ``(module, name imported from it or None for the module itself,
    line)``; and ``module._name`` attribute uses through a module it imported, as
    ``(module, "_name", line)``."""
    tree = _parse(path)
    out = []
    bound = {}  # local name -> module it names
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target:
                    out.append((target, None, node.lineno))
                    if alias.asname and alias.name in modules:
                        bound[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(name, path)
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:  # ``from . import x``: the module x
                    out.append((sub, None, node.lineno))
                    bound[alias.asname or alias.name] = sub
                elif base in modules:
                    out.append((base, alias.name, node.lineno))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            out.append((bound[node.value.id], node.attr, node.lineno))
    return out


def _private(name: str | None) -> bool:
    return bool(name) and name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _inside(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def import_circles(package: str, root: Path = ROOT) -> list[list[str]]:
    """The import circles (strongly connected components of more than one module, or a
    module importing itself) of the whole top-level package that hold a module of
    ``package``."""
    top = package.partition(".")[0]
    modules = modules_of(root, top)
    graph = {m: {t for t, _, _ in imports_of(m, p, modules) if t in modules} for m, p in modules.items()}
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [c for c in found if any(_inside(m, package) for m in c)]


def private_imports(package: str, root: Path = ROOT) -> list[str]:
    """``module:line imports other._name`` for each module of ``package`` that uses
    another module's private name."""
    modules = modules_of(root, package.partition(".")[0])
    out = []
    for name, path in modules.items():
        if _inside(name, package):
            for target, imported, line in imports_of(name, path, modules):
                if target != name and _private(imported):
                    out.append(f"{name}:{line} imports {target}.{imported}")
    return out


#: private attributes of other libraries' objects used by their documented names (pyarrow's
#: C data interface, ctypes' structure fields, CPython's frames, the process exit without
#: finalization)
FOREIGN_PRIVATE = frozenset({"_export_to_c", "_import_from_c", "_fields_", "_getframe", "_exit"})


def _defined_names(tree: ast.Module) -> set[str]:
    """Every name a module defines for its own objects: functions, classes and their
    methods, attributes assigned (``x._name = ...``, ``__slots__`` entries) and names
    bound at any level."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.add(node.value)  # (``__slots__ = ("_name", ...)``, getattr(obj, "_name"))
    return out


def private_attributes(package: str, root: Path = ROOT) -> list[str]:
    """``module:line uses obj._name`` for each use, in a module of ``package``, of a
    private attribute of an object other than ``self``/``cls`` that the module does not
    define itself (another module's object reached into)."""
    modules = modules_of(root, package.partition(".")[0])
    out = []
    for name, path in modules.items():
        if not _inside(name, package):
            continue
        tree = _parse(path)
        own = _defined_names(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in own
                    and node.attr not in FOREIGN_PRIVATE
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
                out.append(f"{name}:{node.lineno} uses {ast.unparse(node)}")
    return sorted(set(out))


def long_modules(package: str, root: Path = ROOT, limit: int = MAX_LINES) -> list[str]:
    """``file: lines`` for each module of ``package`` over ``limit`` lines."""
    modules = modules_of(root, package.partition(".")[0])
    out = []
    for name, path in modules.items():
        if _inside(name, package):
            lines = len(path.read_text().splitlines())
            if lines > limit:
                out.append(f"{path.relative_to(root)}: {lines}")
    return out


def layer_of(module: str, layers=LAYERS) -> int:
    """The position in ``layers`` of the layer whose longest prefix names ``module``."""
    best = None
    for i, (_, prefixes) in enumerate(layers):
        for prefix in prefixes:
            if _inside(module, prefix) and (best is None or len(prefix) > best[1]):
                best = (i, len(prefix))
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS")
    return best[0]


def upward_imports(package: str, root: Path = ROOT, layers=LAYERS, allowed=UPWARD) -> list[str]:
    """Imports of a module of ``package`` from a higher layer than its own, but those
    ``allowed``."""
    modules = modules_of(root, package.partition(".")[0])
    found = []
    for name, path in modules.items():
        if not _inside(name, package):
            continue
        for target, _, line in imports_of(name, path, modules):
            if layer_of(target, layers) > layer_of(name, layers) and (name, target) not in allowed:
                found.append(f"{name}:{line} ({layers[layer_of(name, layers)][0]}) imports {target} "
                             f"({layers[layer_of(target, layers)][0]})")
    return sorted(set(found))


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_a_higher_layer(package):
    assert upward_imports(package) == []


def test_the_layer_check_finds_an_upward_import(tmp_path):
    pkg = tmp_path / "top"
    (pkg / "low").mkdir(parents=True)
    for path in ("__init__.py", "low/__init__.py", "high.py"):
        (pkg / path).write_text("")
    layers = [("low", ["top.low"]), ("high", ["top.high", "top"])]
    (pkg / "low" / "a.py").write_text("def f():\n    from ..high import g\n")
    assert upward_imports("top", tmp_path, layers, {}) == ["top.low.a:2 (low) imports top.high (high)"]
    assert upward_imports("top", tmp_path, layers, {("top.low.a", "top.high"): "why"}) == []
    (pkg / "low" / "a.py").write_text("")
    (pkg / "high.py").write_text("from .low import a\n")
    assert upward_imports("top", tmp_path, layers, {}) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_circle(package):
    assert import_circles(package) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_uses_another_modules_private_name(package):
    assert private_imports(package) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_uses_a_private_attribute_of_another_modules_object(package):
    assert private_attributes(package) == []


def test_the_private_attribute_check_finds_a_reach_into_another_object(tmp_path):
    pkg = tmp_path / "top"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("class A:\n    def __init__(self):\n        self._x = 1\n        self._y = 2\n"
                              "    def f(self, other):\n        return other._y\n")
    (pkg / "b.py").write_text("def g(a):\n    return a._x + a._y\n")
    assert private_attributes("top", tmp_path) == ["top.b:2 uses a._x", "top.b:2 uses a._y"]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_is_over_the_line_limit(package):
    over = {}
    for entry in long_modules(package):
        path, _, lines = entry.rpartition(": ")
        over[path] = int(lines)
    grown = {p: n for p, n in over.items() if n > LONG_MODULES.get(p, MAX_LINES)}
    assert grown == {}, "modules over the line limit (or over their LONG_MODULES ceiling)"
    listed = {p for p in LONG_MODULES if _inside(p.removesuffix(".py").replace("/", "."), package)}
    assert listed - set(over) == set(), "under the limit now: remove these from LONG_MODULES"


def native_kernels_over(limit: int, root: Path = ROOT / "rcfmt" / "_native") -> dict[str, int]:
    """The ``.pyx`` files under ``root`` longer than ``limit`` lines, with their lengths."""
    lengths = {p.name: len(p.read_text().splitlines()) for p in sorted(root.glob("*.pyx"))}
    return {name: n for name, n in lengths.items() if n > limit}


#: a width branch over Arrow offsets: ``(<int64_t*>x)[i]`` beside ``(<int32_t*>x)[i]``
#: under ``if wide`` -- the copies ``offsets.pxd``'s accessors replace
_WIDTH_COPY = re.compile(r"if (not )?wide\b.*\n(.*\n)?\s*.*\(<(const )?int(32|64)_t\*>")


def offset_width_copies(root: Path = ROOT / "rcfmt" / "_native") -> list[str]:
    """``file:line`` of each width-specialized offset access in the native kernels, but
    the accessors' own header."""
    found = []
    for path in sorted([*root.glob("*.pyx"), *root.glob("*.pxd")]):
        if path.name in ("offsets.pxd", "validate.pxd"):
            continue
        text = path.read_text()
        found += [f"{path.name}:{text.count(chr(10), 0, m.start()) + 1}" for m in _WIDTH_COPY.finditer(text)]
    return found


def _protocol_members(path: Path, name: str) -> set[str]:
    """The names a ``typing.Protocol`` class ``name`` of ``path`` declares."""
    for node in _parse(path).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            out = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    out.add(item.target.id)
            return out
    raise AssertionError(f"no class {name} in {path}")


def file_uses_outside(members: set[str], package: Path = ROOT / "rcfmt" / "scan") -> list[str]:
    """``file.<name>`` uses (``file``, ``self.file``, ``query.file``, ...) in the modules
    of ``package`` whose name is not among ``members``."""
    found = []
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(_parse(path)):
            if not isinstance(node, ast.Attribute):
                continue
            base = node.value
            named_file = (isinstance(base, ast.Name) and base.id == "file") or (
                isinstance(base, ast.Attribute) and base.attr == "file")
            if named_file and node.attr not in members:
                found.append(f"{path.name}:{node.lineno} file.{node.attr}")
    return found


def test_the_scan_uses_only_what_its_file_protocol_declares(tmp_path):
    """The scan's typed boundary (docs/ARCHITECTURE.md): every ``file.<name>`` in
    ``rcfmt/scan`` is a member of ``ScanFile``, and ``RcfmtFile`` has every member."""
    import rcfmt
    from rcfmt.file.reader import RcfmtFile
    from rcfmt.scan.source import ScanFile

    members = _protocol_members(ROOT / "rcfmt" / "scan" / "source.py", "ScanFile")
    assert file_uses_outside(members) == []
    missing = [m for m in members if not hasattr(RcfmtFile, m) and m not in RcfmtFile.__init__.__code__.co_names]
    assert missing == []
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(__import__("pyarrow").table({"a": [1, 2]}), path)
    with rcfmt.open(path) as f:
        assert isinstance(f, ScanFile) and all(hasattr(f, m) for m in members)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("def g(self):\n    return self.file.secret\n")  # (the check can fail)
    assert file_uses_outside(members, tmp_path / "pkg") == ["m.py:2 file.secret"]


#: the test modules at the root of tests/: those of the whole package (every other suite
#: sits in the directory of the package it tests: docs/ARCHITECTURE.md, "Tests")
ROOT_TESTS = {"test_api.py", "test_api_docs.py", "test_structure.py", "test_cold_imports.py",
              "test_fresh_interpreter.py", "test_kill_anywhere.py", "test_fuzz_pages.py"}


def loose_tests(tests: Path = ROOT / "tests") -> list[str]:
    """Test modules at the root of ``tests`` that are not whole-package ones."""
    return sorted(p.name for p in tests.glob("test_*.py") if p.name not in ROOT_TESTS)


def test_the_tests_mirror_the_packages(tmp_path):
    assert loose_tests() == []
    (tmp_path / "test_api.py").write_text("")
    (tmp_path / "test_something.py").write_text("")  # (the check can fail)
    assert loose_tests(tmp_path) == ["test_something.py"]


def test_no_native_kernel_is_over_the_line_limit(tmp_path):
    """Each ``.pyx`` holds one concern (docs/ARCHITECTURE.md, "The native kernels")."""
    assert native_kernels_over(MAX_LINES) == {}
    (tmp_path / "long.pyx").write_text("x = 1\n" * (MAX_LINES + 1))  # (the check can fail)
    (tmp_path / "short.pyx").write_text("x = 1\n" * MAX_LINES)
    assert native_kernels_over(MAX_LINES, tmp_path) == {"long.pyx": MAX_LINES + 1}


def test_native_offsets_are_written_once(tmp_path):
    """String/binary offsets go through ``put_offset``/``get_offset`` (issue 60 item 4:
    no hand-copied int32/int64 variants)."""
    assert offset_width_copies() == []
    (tmp_path / "copy.pyx").write_text(  # (the check can fail)
        "x = 1\n        if wide:\n            (<int64_t*>col.values)[i] = p\n        else:\n"
        "            (<int32_t*>col.values)[i] = <int32_t>p\n")
    assert offset_width_copies(tmp_path) == ["copy.pyx:2"]


def test_rcfmt_does_not_import_the_old_names():
    modules = modules_of(ROOT)
    found = [f"{name}:{line} imports {target}" for name, path in modules.items() if name not in ALIASES
             for target, _, line in imports_of(name, path, modules) if target in ALIASES]
    assert found == []


def test_the_spark_source_uses_no_private_name_of_rcfmt():
    """``spark_datasource`` (in this repository, outside the package) reaches rcfmt
    through public names only: a private one moves or changes without notice."""
    modules = {**modules_of(ROOT), **modules_of(ROOT, "spark_datasource")}
    found = [f"{name}:{line} imports {target}.{imported}" for name, path in modules.items()
             if _inside(name, "spark_datasource")
             for target, imported, line in imports_of(name, path, modules)
             if _inside(target, "rcfmt") and _private(imported)]
    assert found == []


def test_the_spark_source_reaches_into_no_object_of_rcfmt():
    assert private_attributes("spark_datasource") == []


def test_the_checks_find_what_they_look_for(tmp_path):
    """The checks fail on a circle hidden in a function, on a private name imported or
    reached through a module, and on a long file (a structure test that cannot fail
    would pass on any shape)."""
    pkg = tmp_path / "top" / "pkg"
    pkg.mkdir(parents=True)
    (tmp_path / "top" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from .a import run\n")
    (pkg / "a.py").write_text("from . import b\n\ndef run():\n    return b._helper()\n")
    (pkg / "b.py").write_text("def _helper():\n    from .a import run\n    return run\n")
    (pkg / "c.py").write_text("from .b import _helper\n" + "x = 1\n" * 5)
    (pkg / "d.py").write_text("from ..pkg import c\n")
    assert import_circles("top.pkg", tmp_path) == [["top.pkg.a", "top.pkg.b"]]
    assert sorted(private_imports("top.pkg", tmp_path)) == ["top.pkg.a:4 imports top.pkg.b._helper",
                                                           "top.pkg.c:1 imports top.pkg.b._helper"]
    assert long_modules("top.pkg", tmp_path, limit=5) == [str(Path("top/pkg/c.py")) + ": 6"]
    (pkg / "b.py").write_text("def helper():\n    return 1\n")
    (pkg / "a.py").write_text("from . import b\n\ndef run():\n    return b.helper()\n")
    (pkg / "c.py").write_text("from .b import helper\n")
    assert import_circles("top.pkg", tmp_path) == [] and private_imports("top.pkg", tmp_path) == []
