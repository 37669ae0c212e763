"""The library policy when graded: a copy of ``tensoradbook/`` for the sandbox, without what an assignment forbids.

:mod:`tensoradbook.exercises.policy` says, per assignment, which parts of the library its graded answers may not
use. A guard in the student's own process can be undone by the student's code (the original is still in memory,
and its source on disk); so the sandbox that runs a submission's cells sees a copy of the package instead, written
by :func:`sandbox_package`, in which

* every forbidden function, class and method is a stub with the same name and parameters (literal defaults kept,
  others ``None``): calling it (or making an instance of the class, or reading the property) raises the audit
  event ``tensoradbook.library_policy`` ``(qualified name, assignment)`` and then
  :class:`~tensoradbook.exercises.policy.LibraryPolicyError`. The original code is not in the copy: the AST of
  each such module is written out again (:func:`ast.unparse`, comments gone) with the stubs in place;
* a module the policy forbids whole (every module of :mod:`tensoradbook.exercises`, the checks, among them) keeps
  its imports, its ``__all__`` and its plain constants (of the checks' modules only those another module imports),
  so that ``from tensoradbook.exercises import check_bezout, NO_SOLUTION`` still works, and nothing else: the
  checks' data tables (the layers' numpy references, the test cases) go too, and a name another module imports from
  it that is gone becomes ``None``;
* what the language itself calls (``PLUMBING``: the parser's Smith normal form and Fourier-Motzkin elimination)
  keeps its code, and each of its functions and methods refuses, as a stub, every caller but the library's own;
* a function the policy watches (``WATCHED``) raises ``tensoradbook.library_use`` for every call, and does what it
  did;
* everything else is the package as it is, byte for byte: ``import tensoradbook`` and all an assignment allows work.

The copy is cached under the folder given, one per assignment and hash of the sources (this file's included), so a
class's grading writes it once; files 0644, folders 0755, written to a temporary folder and renamed into place.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

from classroom.paths import REPO

SOURCE = REPO / "tensoradbook"
POLICY_MODULE = "exercises/policy.py"
#: The line of policy.py that the copy changes: the copy knows which assignment it was written for.
SANDBOX_LINE = "SANDBOX_STEM: str | None = None"

_STUB = """
import sys as _policy_sys
_policy_sys.audit({event!r}, {name!r}, {stem!r})
from {package}.exercises.policy import LibraryPolicyError as _PolicyError
raise _PolicyError({name!r}, {stem!r})
"""
#: The first lines of a ``PLUMBING`` function in the copy: the stub's body follows under the ``if``.
_PLUMBING_GUARD = """
from {package}.exercises.policy import library_caller as _policy_library_caller
if not _policy_library_caller(__import__('sys')._getframe(1)):
    pass
"""
#: After a ``PLUMBING`` class in the copy: its ``__init__`` refuses a caller that is not the library's. The policy
#: module is imported when one is made, not here: the package imports this module on its way to the exercises.
_PLUMBING_CLASS = """
def _policy_guard(cls):
    inherited = cls.__init__

    def __init__(self, *args, **kwargs):
        from {package}.exercises.policy import library_caller, refuse
        if not library_caller(__import__('sys')._getframe(1)):
            refuse({name!r}, {stem!r})
        if inherited is object.__init__:
            inherited(self)
        else:
            inherited(self, *args, **kwargs)
    cls.__init__ = __init__


_policy_guard({cls})
del _policy_guard
"""
_KEPT_DECORATORS = {"staticmethod": "staticmethod", "classmethod": "classmethod", "property": "property",
                    "cached_property": "property"}
_DROPPED_BASES = {"NamedTuple", "Enum", "IntEnum", "StrEnum", "Flag", "IntFlag", "TypedDict", "Protocol", "Generic"}


def load_policy(source: Path = SOURCE):
    """``exercises/policy.py`` of the package at ``source``, loaded on its own (standard library only: the grader
    need not import the package to write its copy)."""
    path = Path(source) / POLICY_MODULE
    spec = importlib.util.spec_from_file_location(f"_library_policy_of_{abs(hash(str(path)))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sources(source: Path) -> list[Path]:
    return sorted(p for p in source.rglob("*.py") if "__pycache__" not in p.relative_to(source).parts)


def _digest(stem: str, source: Path, files: list[Path]) -> str:
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(stem.encode())
    for path in files:
        digest.update(str(path.relative_to(source)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def sandbox_package(stem: str, into: Path, source: Path = SOURCE) -> Path:
    """The policy copy of the package for assignment ``stem`` (written under ``into`` unless it is there already):
    the folder to mount over the package's own in the sandbox, ``<into>/<stem>-<hash>/tensoradbook``."""
    source, into = Path(source).resolve(), Path(into)
    policy = load_policy(source)
    policy.forbidden(stem, source.name)  # an unknown assignment: ValueError
    files = _sources(source)
    final = into / f"{stem}-{_digest(stem, source, files)}"
    package = final / source.name
    if package.is_dir():
        return package
    into.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{stem}-", dir=into))
    try:
        _write_copy(policy, stem, source, files, temporary / source.name)
        _set_modes(temporary)
        try:
            os.rename(temporary, final)
        except OSError:
            if not package.is_dir():  # not another grader's copy, written meanwhile
                raise
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return package


def _set_modes(folder: Path) -> None:
    os.chmod(folder, 0o755)
    for path in folder.rglob("*"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)


def _module_name(source: Path, path: Path) -> str:
    parts = [source.name, *path.relative_to(source).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _write_copy(policy, stem: str, source: Path, files: list[Path], target: Path) -> None:
    modules = {_module_name(source, path): path for path in files}
    changed = set(policy.affected(stem, str(source)))
    changed |= {policy.locate(name, str(source))[0] for name in policy.WATCHED.get(stem, ())}
    imported = _imported_names(modules)
    seen: set[str] = set(modules)
    for module, path in modules.items():
        text = path.read_text()
        if module in changed:
            # a package's submodules are not names to stand in for
            names = {n for n in imported.get(module, ()) if f"{module}.{n}" not in modules}
            stubs = ModuleStubs(policy, stem, module, names)
            text = stubs.text(text)
            seen |= stubs.seen
        elif path.relative_to(source).as_posix() == POLICY_MODULE:
            text = _marked(text, stem)
        out = target / path.relative_to(source)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    # a name allowed that is not there allows nothing; one forbidden or watched that is not there is a stale policy
    unknown = [n for n in (*policy.POLICIES[stem], *policy.WATCHED.get(stem, ())) if n not in seen]
    if unknown:
        raise ValueError(f"the library policy of {stem} names what the package does not define: {', '.join(unknown)}")


def _marked(text: str, stem: str) -> str:
    if text.count(SANDBOX_LINE) != 1:
        raise ValueError(f"{POLICY_MODULE} must have the line {SANDBOX_LINE!r} once")
    return text.replace(SANDBOX_LINE, f"SANDBOX_STEM: str | None = {stem!r}")


def _imported_names(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the names other modules of the package import from it (``from .x import name``)."""
    imported: dict[str, set[str]] = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package.rsplit(".", node.level - 1)[0] if node.level else ""
                source = ".".join(p for p in (base, node.module or "") if p)
                imported.setdefault(source, set()).update(a.name for a in node.names)
    return imported


def _literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _inert(node: ast.AST) -> bool:
    """An expression that runs no code of the module: names, attributes, literals and operators on them."""
    active = (ast.Call, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Await,
              ast.NamedExpr, ast.Yield, ast.YieldFrom)
    return not any(isinstance(n, active) for n in ast.walk(node))


class ModuleStubs:
    """The stubbed text of one module of the copy; ``seen`` collects the qualified names it defines."""

    def __init__(self, policy, stem: str, module: str, imported: set[str]):
        self.policy, self.stem, self.module, self.imported = policy, stem, module, imported
        self.package = module.split(".")[0]
        self.whole = policy.forbidden(stem, module)
        self.checks = any(policy.covers(entry, module) for entry in policy.CHECKS.names)
        self.watched = set(policy.WATCHED.get(stem, ()))
        self.seen: set[str] = set()

    def text(self, source: str) -> str:
        tree = ast.parse(source)
        tree.body = self.statements(tree.body, self.module, top=True)
        bound = _bound_names(tree.body)
        tree.body += [ast.parse(f"{name} = None").body[0] for name in sorted(self.imported - bound)]
        header = (f"# The library policy's copy for assignment {self.stem} (classroom/library_policy.py): what the "
                  "assignment forbids is a stub here.\n")
        return header + ast.unparse(ast.fix_missing_locations(tree)) + "\n"

    def statements(self, body: list[ast.stmt], prefix: str, top: bool) -> list[ast.stmt]:
        kept = []
        for index, node in enumerate(body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                done = self.definition(node, f"{prefix}.{node.name}", method=not top)
                kept += done if isinstance(done, list) else [done]
            elif isinstance(node, (ast.If, ast.Try)) and top:
                kept.append(self.block(node, prefix))
            elif not (top and self.whole) or self.kept_at_top(node, index):
                kept.append(node)
        return kept

    def block(self, node: ast.If | ast.Try, prefix: str) -> ast.stmt:
        for field in ("body", "orelse", "finalbody"):
            if getattr(node, field, None):
                setattr(node, field, self.statements(getattr(node, field), prefix, top=True) or [ast.Pass()])
        for handler in getattr(node, "handlers", []):
            handler.body = self.statements(handler.body, prefix, top=True) or [ast.Pass()]
        return node

    def kept_at_top(self, node: ast.stmt, index: int) -> bool:
        """What a module forbidden whole keeps besides its stubs: its docstring, imports and plain constants."""
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return True
        if isinstance(node, ast.Expr):
            return index == 0 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            if self.checks:  # of the checks' constants only those other modules import (NO_SOLUTION), and __all__
                return _literal(node.value) and _bound_names([node]) <= self.imported | {"__all__"}
            return _inert(node.value)
        return False

    def definition(self, node, name: str, method: bool):
        self.seen.add(name)
        if self.policy.forbidden(self.stem, name) and self.policy.plumbing(name):
            return self.guarded(node, name)
        if self.policy.forbidden(self.stem, name):
            if isinstance(node, ast.ClassDef):
                return self.stub_class(node, name)
            return self.stub_function(node, name, method)
        if isinstance(node, ast.ClassDef):
            node.body = self.statements(node.body, name, top=False)
        elif name in self.watched:
            node.body[_after_docstring(node.body):0] = ast.parse(
                f"__import__('sys').audit({self.policy.USE_EVENT!r}, {name!r}, {self.stem!r})").body
        return node

    def guarded(self, node, name: str):
        """What the language itself calls (``PLUMBING``): the code as it is, each function and method first refusing
        a caller that is not the library's (a student's), as a stub refuses everyone."""
        if isinstance(node, ast.ClassDef):
            for child in node.body:
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self.seen.add(f"{name}.{child.name}")
                    self.guarded(child, f"{name}.{child.name}")
            # making one (a dataclass's or a NamedTuple's __init__ too) is refused as the class
            return [node, *ast.parse(_PLUMBING_CLASS.format(package=self.package, cls=node.name, name=name,
                                                            stem=self.stem)).body]
        refusal = ast.parse(_PLUMBING_GUARD.format(package=self.package)).body
        refusal[-1].body = self.stub_body(name)[1:]
        node.body[_after_docstring(node.body):0] = refusal
        return node

    def stub_body(self, name: str) -> list[ast.stmt]:
        short = name.rsplit(".", 1)[-1]
        why = self.policy.reason(self.stem, name)
        doc = (f"{short}: not available in graded answers of assignment {self.stem} (library policy: {why}; "
               f"see {self.package}.exercises.policy).")
        return [ast.Expr(ast.Constant(doc))] + ast.parse(_STUB.format(
            event=self.policy.AUDIT_EVENT, name=name, stem=self.stem, package=self.package)).body

    def stub_function(self, node, name: str, method: bool = False) -> ast.stmt:
        arguments = node.args
        arguments.defaults = [d if _literal(d) else ast.Constant(None) for d in arguments.defaults]
        arguments.kw_defaults = [d if d is None or _literal(d) else ast.Constant(None) for d in arguments.kw_defaults]
        decorators = [ast.Name(d, ast.Load()) for d in map(_decorator_name, node.decorator_list) if d and method]
        decorators += [d for d in node.decorator_list if method and isinstance(d, ast.Attribute)
                       and d.attr in ("setter", "getter", "deleter")]
        stub = ast.FunctionDef(node.name, arguments, self.stub_body(name), decorators, node.returns,
                               getattr(node, "type_comment", None), **_type_params(node))
        if any("jit" in ast.unparse(d) for d in node.decorator_list) and not method:
            # a Numba function: its callers may ask for the Python version
            return [stub, ast.parse(f"{node.name}.py_func = {node.name}").body[0]]
        return stub

    def stub_class(self, node: ast.ClassDef, name: str) -> ast.ClassDef:
        body = [self.stub_body(name)[0],
                ast.FunctionDef("__new__", ast.parse("def f(cls, *args, **kwargs): pass").body[0].args,
                                self.stub_body(name)[1:], [], None, None, **_type_params(node))]
        for child in node.body:
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and child.name != "__new__":
                self.seen.add(f"{name}.{child.name}")
                body.append(self.stub_function(child, f"{name}.{child.name}", method=True))
            elif isinstance(child, ast.ClassDef):
                self.seen.add(f"{name}.{child.name}")
                body.append(self.stub_class(child, f"{name}.{child.name}"))
        bases = [b for b in node.bases if not isinstance(b, ast.Subscript) and _base_name(b) not in _DROPPED_BASES]
        return ast.ClassDef(node.name, bases, [], _flat(body), [], **_type_params(node))


def _flat(body: list) -> list[ast.stmt]:
    return [s for item in body for s in (item if isinstance(item, list) else [item])]


def _type_params(node) -> dict:
    return {"type_params": []} if "type_params" in ast.FunctionDef._fields else {}


def _base_name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def _decorator_name(node: ast.expr) -> str | None:
    """The decorator a method stub keeps (``cached_property`` becomes ``property``), or None."""
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
    return _KEPT_DECORATORS.get(name) if not isinstance(node, ast.Call) else None


def _after_docstring(body: list[ast.stmt]) -> int:
    first = body[0] if body else None
    return int(isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
               and isinstance(first.value.value, str))


def _bound_names(body: list[ast.stmt]) -> set[str]:
    bound = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.If, ast.Try)):
            bound |= _bound_names([*node.body, *node.orelse, *getattr(node, "finalbody", []),
                                   *(s for h in getattr(node, "handlers", []) for s in h.body)])
    return bound
