"""The per-assignment library policy (tensoradbook/exercises/policy.py, classroom/library_policy.py).

* The table: one policy per assignment, every one forbidding the checks, every name it gives in the package.
* The policy leaves every exercise solvable: each assignment's setup, data and instructor solutions run in its
  policy copy (a subprocess with the copy first on ``sys.path``), and with the policy enforced on the real library
  they run and pass their checks, hidden tests included (the student's kernel: the checks' own use of the library
  goes through, the answers' does not).
* What it forbids is refused, with the name in the message and an audit event: every forbidden function and class
  of every assignment, in its copy and after :func:`enforce`; the setup cell does it in a notebook's kernel and
  nowhere else.
* The copy: the forbidden originals' code is not in it (every statement of a forbidden body that appears nowhere
  else is absent), the checks are stubs, their data tables gone, ``import tensoradbook`` and every module import;
  a stub keeps its function's parameters (hypothesis); the copy is cached by content, 0644/0755.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from classroom import assignments, source
import tensoradbook as tab
from classroom import library_policy as lp
from tensoradbook.exercises import policy

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "tensoradbook"
STEMS = list(policy.POLICIES)
#: The bridges import PyTorch and JAX (seconds each): imported in one assignment's copy only.
BRIDGES = ("tensoradbook.torch", "tensoradbook.jax", "tensoradbook.__main__")

# What the subprocesses share: call anything with placeholder arguments; the audit events of the policy.
PRELUDE = r'''
import contextlib, importlib, inspect, io, json, os, sys

def placeholder_call(value):
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return value()
    args, kwargs = [], {}
    for p in signature.parameters.values():
        if p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.kind == p.KEYWORD_ONLY:
            kwargs[p.name] = None
        else:
            args.append(None)
    return value(*args, **kwargs)

EVENTS = []
sys.addaudithook(lambda event, args: EVENTS.append((event, *args)) if event.startswith("tensoradbook.") else None)
PROBLEMS = []

def run_cells(cells, namespace):
    for name, code in cells:
        try:
            with contextlib.redirect_stdout(io.StringIO()) as out:
                exec(compile(code, name, "exec"), namespace)
        except BaseException as error:
            PROBLEMS.append(f"{name}: {type(error).__name__}: {str(error)[:500]}")

def refuses(policy, stem, name, value):
    """Calling value raises LibraryPolicyError naming it, after the audit event (name, stem)."""
    EVENTS.clear()
    try:
        placeholder_call(value)
    except policy.LibraryPolicyError as error:
        if name not in str(error) or stem not in str(error):
            PROBLEMS.append(f"{name}: the message does not name it: {error}")
        if (policy.AUDIT_EVENT, name, stem) not in EVENTS:
            PROBLEMS.append(f"{name}: no audit event ({EVENTS})")
        return True
    except Exception as error:
        PROBLEMS.append(f"{name}: {type(error).__name__} instead of LibraryPolicyError: {str(error)[:300]}")
    else:
        PROBLEMS.append(f"{name}: called, not refused")
    return False
'''

IN_COPY = PRELUDE + r'''
import pickle
copy, stem, repo, skip, record = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(","), sys.argv[5]
# the copy instead of the editable install (whose finder comes before sys.path), the repository for classroom
sys.meta_path[:] = [f for f in sys.meta_path
                    if "editable" not in (getattr(f, "__module__", "") + type(f).__module__).lower()]
sys.path[:0] = [copy, repo]
import tensoradbook
from tensoradbook.exercises import policy
from classroom import source, wire
from classroom.assignments import BY_STEM

assert tensoradbook.__file__.startswith(copy + os.sep), tensoradbook.__file__
assert policy.SANDBOX_STEM == stem, policy.SANDBOX_STEM
assignment = BY_STEM[stem]
cells = [("setup", source.setup_source(assignment))]
for ex in assignment.exercises:
    cells += [(f"ex{ex.number} given", ex.given)] if ex.given else []
    cells += [(f"ex{ex.number}{part.label} solution", part.solution) for part in ex.parts]
namespace = {"__name__": "__main__"}
run_cells(cells, namespace)
# the calls the checks made of the students' functions with the real library, made again here
with open(record, "rb") as file:
    calls = pickle.load(file)
for name, arguments, outcome in calls:
    try:
        args, kwargs = wire.decode(pickle.loads(arguments))
        namespace[name](*args, **kwargs)
        again = None
    except Exception as error:
        again = type(error).__name__
    if again != outcome:
        PROBLEMS.append(f"{name}: {again or 'no error'} here, {outcome or 'no error'} with the real library")
refused = 0
for module_name in policy.modules(os.path.dirname(tensoradbook.__file__)):
    if module_name in skip:
        continue
    module = importlib.import_module(module_name)
    for attribute, value in list(vars(module).items()):
        name = f"{module_name}.{attribute}"
        if policy.defined_in(value, module_name) and policy.forbidden(stem, name):
            refused += refuses(policy, stem, name, value)
print(json.dumps({"problems": PROBLEMS, "refused": refused}))
'''

ENFORCED = PRELUDE + r'''
import functools, pickle
stem, repo, record = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, repo)
import tensoradbook
from tensoradbook.exercises import policy
from classroom import source, wire
from classroom.assignments import BY_STEM

derive = tensoradbook.derive
namespace = {"__name__": "__main__"}
assignment = BY_STEM[stem]
run_cells([("setup", source.setup_source(assignment))], namespace)
assert not policy._PATCHES, "enforce outside a notebook's kernel changed something"
assert policy.enforce(stem, anywhere=True) and policy.enforce(stem, anywhere=True)
patches = len(policy._PATCHES)
assert policy.enforce(stem, anywhere=True) and len(policy._PATCHES) == patches, "enforce is not idempotent"
CALLS = []  # (name, pickled arguments, the exception's type or None): what the copy's run calls again
WRAPPED = []


def recorded(name, function):
    @functools.wraps(function)  # its signature too: the kernel body's check reads its parameters
    def call(*args, **kwargs):
        try:  # as the grader sends them to the sandbox
            callables = []
            arguments = pickle.dumps(wire.encode([list(args), dict(kwargs)], callables))
            arguments = None if callables else arguments
        except Exception:
            arguments = None
        outcome = None
        try:
            return function(*args, **kwargs)
        except Exception as error:
            outcome = type(error).__name__
            raise
        finally:
            if arguments is not None and sum(c[0] == name for c in CALLS) < 100:
                CALLS.append((name, arguments, outcome))
    return call


for ex in assignment.exercises:
    run_cells([(f"ex{ex.number} given", ex.given)] if ex.given else [], namespace)
    for part in ex.parts:
        run_cells([(f"ex{ex.number}{part.label} solution", part.solution)], namespace)
        if callable(namespace.get(part.answer)):  # a function the student writes, which the checks call
            namespace[part.answer] = recorded(part.answer, namespace[part.answer])
            WRAPPED.append(part.answer)
        run_cells([(f"ex{ex.number}{part.label} test", source.test_source(part))], namespace)
with open(record, "wb") as file:
    pickle.dump(CALLS, file)
refused = 0
for module_name in policy.affected(stem):
    module = importlib.import_module(module_name)
    for attribute, value in list(vars(module).items()):
        name = f"{module_name}.{attribute}"
        if (policy.defined_in(value, module_name) and policy.forbidden(stem, name) and not policy._live_check(name)
                and not (isinstance(value, type) and name.startswith("tensoradbook.exercises."))):
            refused += refuses(policy, stem, name, value)
policy.lift()
if tensoradbook.derive is not derive or policy._PATCHES:
    PROBLEMS.append("lift() left guards behind")
print(json.dumps({"problems": PROBLEMS, "refused": refused, "functions": WRAPPED,
                  "called": sorted({c[0] for c in CALLS})}))
'''


def _python(script: str, *args: str, timeout: int = 600) -> dict:
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, f"the subprocess failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    """stem -> its policy copy (written once per test module)."""
    folder = tmp_path_factory.mktemp("policy-copies")
    return cache(lambda stem: lp.sandbox_package(stem, folder))


# --- the table ----------------------------------------------------------------------------------------------

def test_every_assignment_has_a_policy_that_forbids_the_checks():
    assert set(policy.POLICIES) == set(assignments.BY_STEM)
    assert set(policy.ALLOWED) <= set(policy.POLICIES) and set(policy.WATCHED) <= set(policy.POLICIES)
    for stem, names in policy.POLICIES.items():
        assert "tensoradbook.exercises" in names, stem
        assert policy.forbidden(stem, "tensoradbook.exercises.ch05_derivatives.check_derivative")
        assert not policy.forbidden(stem, "tensoradbook.exercises.policy.enforce")
        assert not policy.forbidden(stem, "tensoradbook.lang.parser.parse"), "the notation is every assignment's"


def test_every_name_of_the_policy_is_in_the_package():
    for stem in STEMS:
        for name in (*policy.POLICIES[stem], *policy.ALLOWED.get(stem, ()), *policy.WATCHED.get(stem, ())):
            module, attributes = policy.locate(name)
            value = __import__(module, fromlist=["_"])
            for attribute in attributes:
                value = getattr(value, attribute)  # AttributeError: a name the package does not define
        for name in policy.ALLOWED.get(stem, ()):
            assert any(policy.covers(entry, name) for entry in policy.POLICIES[stem]), f"{stem}: {name}"


def test_the_policies_forbid_what_answers_the_exercises():
    """Spot checks of the table against the exercises (the reviewer's cases among them)."""
    derivation = ["01_introduction", "02_reverse_accumulation", "05_elementwise_derivatives", "10_tensor_programs",
                  "12_build_it_yourself"]
    for stem in derivation:
        assert policy.forbidden(stem, "tensoradbook.ad.derive.derive") and policy.forbidden(
            stem, "tensoradbook.ad.derive.Gradients")
    for stem in ("02_reverse_accumulation", "12_build_it_yourself"):
        assert policy.forbidden(stem, "tensoradbook.ad.reverse.reverse_accumulate")
    for name in ("smith_normal_form", "extended_gcd", "integer_inverse", "euclid_table", "_SmithRun"):
        assert policy.forbidden("04a_integer_equations", f"tensoradbook.integer.smith.{name}")
    assert policy.forbidden("04b_fourier_motzkin", "tensoradbook.integer.fourier_motzkin.fourier_motzkin")
    assert policy.forbidden("08_inverse_accumulation", "tensoradbook.inverse.sweeps.reverse_inverse")
    assert policy.forbidden("09b_tape_bounds", "tensoradbook.chaining.optimize.optimize")
    # what the exercises tell students to use stays
    assert not policy.forbidden("07_higher_order", "tensoradbook.ad.derive.derive")  # "derive, derive again"
    assert not policy.forbidden("12_build_it_yourself", "tensoradbook.integer.smith.smith_normal_form")
    assert not policy.forbidden("12_build_it_yourself", "tensoradbook.ad.reverse.local_partials")
    assert not policy.forbidden("08_inverse_accumulation", "tensoradbook.inverse.program.trace")
    assert not policy.forbidden("09a_jacobian_chaining", "tensoradbook.chaining.chain.Chain")


def test_the_message_names_the_function_the_assignment_and_why():
    error = policy.LibraryPolicyError("tensoradbook.ad.derive.derive", "05_elementwise_derivatives")
    text = str(error)
    assert text.startswith("derive (tensoradbook.ad.derive.derive) is not allowed in graded answers of assignment "
                           "05_elementwise_derivatives: Algorithm 4")
    assert isinstance(error, Exception) and (error.name, error.stem) == ("tensoradbook.ad.derive.derive",
                                                                         "05_elementwise_derivatives")
    with pytest.raises(ValueError, match="no library policy"):
        policy.forbidden("13_no_such_chapter", "tensoradbook.derive")


def test_setup_cells_put_the_policy_in_place():
    for assignment in assignments.ASSIGNMENTS:
        path = REPO / "course" / "source" / assignment.stem / f"{assignment.stem}.ipynb"
        setup = next("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                     if c["metadata"]["nbgrader"]["grade_id"] == "setup")
        assert setup == source.setup_source(assignment)
        assert setup.startswith("from tensoradbook.exercises.policy import enforce")
        assert setup.endswith(f'enforce("{assignment.stem}")')


# --- solvable under the policy; what it forbids refused ---------------------------------------------------------

@pytest.mark.parametrize("stem", STEMS)
def test_every_exercise_is_solvable_under_the_policy(stem, copies, tmp_path):
    """First with the policy enforced on the real library (the student's kernel): data, solutions and tests (hidden
    ones too) run and pass, the checks' own use of the library going through; every forbidden function and class
    refuses a call from here, naming itself, after the audit event; enforce is idempotent, lift() undoes it.

    Then in the assignment's policy copy (the sandbox): setup, data and solutions run, and the functions the
    students write (bezout, vec_index, the kernel body, chapter 12's core) answer every call the checks made of
    them above, with the same arguments as the grader sends them (classroom.wire), as they did there; every module
    imports, and every forbidden function and class refuses, naming itself, after the audit event."""
    record = tmp_path / "calls.pickle"
    result = _python(ENFORCED, stem, str(REPO), str(record))
    assert result["problems"] == []
    assert result["refused"] > 0
    assert sorted(result["functions"]) == result["called"]
    skip = () if stem == "05_elementwise_derivatives" else BRIDGES
    result = _python(IN_COPY, str(copies(stem).parent), stem, str(REPO), ",".join(skip), str(record))
    assert result["problems"] == []
    assert result["refused"] > 20, "the checks alone are more"


def test_a_forbidden_call_through_the_library_or_a_check_is_refused_too():
    """Refused where the answer's code calls it through an allowed function, or inside the answer's function that a
    check calls (the check says so); the check's own calls go through."""
    script = PRELUDE + textwrap.dedent(r'''
        sys.path.insert(0, sys.argv[1])
        import tensoradbook as tab
        from tensoradbook.exercises import check_derivative, check_gradient_element, policy
        policy.enforce("06a_kernels", anywhere=True)
        matmul = ("f[i; j] = sum{k}_0^4 (x[i; k] * y[k; j])", {"f": (3, 4), "x": (3, 5), "y": (5, 4)})

        def dy_element(k, j, x, df):
            return tab.derive(*matmul).evaluate({"x": x, "y": x[:, :4]}, df)["y"][k, j]

        result = check_gradient_element(matmul[0], "y", dy_element, shapes=matmul[1])
        if result or "raised LibraryPolicyError" not in str(result) or "ad.derive.derive" not in str(result):
            PROBLEMS.append(f"derive inside the answer's function: {result}")
        policy.enforce("05_elementwise_derivatives", anywhere=True)
        try:  # allowed here; the derive inside it is not
            tab.check_gradients(tab.parse("f[i] = x[i] ** 2", {"f": (2,), "x": (2,)}))
        except policy.LibraryPolicyError as error:
            if "tensoradbook.ad.derive.derive" not in str(error):
                PROBLEMS.append(f"the wrong name: {error}")
        else:
            PROBLEMS.append("derive went through check_gradients")
        right = check_derivative("f[i] = x[i] ** 3", "x", "dx[i] = df[i] * 3 * x[i] ** 2",
                                 shapes={"f": (3,), "x": (3,)})
        if not right:
            PROBLEMS.append(f"the check did not run under the policy: {right}")
        print(json.dumps({"problems": PROBLEMS}))
        ''')
    assert _python(script, str(REPO))["problems"] == []


def test_the_setup_cell_enforces_in_a_notebook_kernel_only():
    """The setup cell in an IPython shell (a student's kernel, the sandbox's worker) prints the policy and refuses
    derive; run as plain code (the grader's process) it leaves the library whole."""
    script = PRELUDE + textwrap.dedent(r'''
        sys.path.insert(0, sys.argv[1])
        from IPython.core.interactiveshell import InteractiveShell
        from classroom import assignments, source
        setup = source.setup_source(assignments.BY_STEM["05_elementwise_derivatives"])
        exec(setup, {"__name__": "grader"})
        import tensoradbook as tab
        plain = tab.derive("f[i] = x[i] ** 2", {"f": (2,), "x": (2,)})
        shell = InteractiveShell.instance()
        with contextlib.redirect_stdout(io.StringIO()) as out:
            shell.run_cell(setup)
        if "Library policy of 05_elementwise_derivatives" not in out.getvalue():
            PROBLEMS.append(f"the setup cell printed {out.getvalue()!r}")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            result = shell.run_cell('tab.derive("f[i] = x[i] ** 2", {"f": (2,), "x": (2,)})')
        error = result.error_in_exec
        if type(error).__name__ != "LibraryPolicyError" or "tensoradbook.ad.derive.derive" not in str(error):
            PROBLEMS.append(f"derive in the kernel: {error!r}")
        print(json.dumps({"problems": PROBLEMS}))
        ''')
    assert _python(script, str(REPO))["problems"] == []


def test_a_watched_function_works_and_is_reported_in_its_copy(copies):
    script = PRELUDE + textwrap.dedent(r'''
        sys.meta_path[:] = [f for f in sys.meta_path
                            if "editable" not in (getattr(f, "__module__", "") + type(f).__module__).lower()]
        sys.path.insert(0, sys.argv[1])
        import tensoradbook as tab
        from tensoradbook.exercises import policy
        grads = tab.derive("f[i] = x[i] ** 2", {"f": (2,), "x": (2,)})
        if (policy.USE_EVENT, "tensoradbook.ad.derive.derive", "07_higher_order") not in EVENTS:
            PROBLEMS.append(f"no use event: {EVENTS}")
        if str(grads["x"]) != "dx[dx_0] = df[dx_0] * (2 * x[dx_0])":
            PROBLEMS.append(f"derive: {grads['x']}")
        print(json.dumps({"problems": PROBLEMS}))
        ''')
    assert _python(script, str(copies("07_higher_order").parent))["problems"] == []


# --- the copy -------------------------------------------------------------------------------------------------

def _statements(tree: ast.AST) -> set[str]:
    """Every statement at any depth, as its AST, docstrings aside (a stub has its own)."""
    return {ast.dump(node) for node in ast.walk(tree) if isinstance(node, ast.stmt)
            and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))}


@cache
def _original_trees() -> dict[str, ast.Module]:
    return {lp._module_name(SOURCE, path): ast.parse(path.read_text()) for path in lp._sources(SOURCE)}


def _forbidden_bodies(stem: str) -> tuple[set[str], set[str]]:
    """The statements of the forbidden definitions' bodies, and those of every other piece of the package (the
    language's plumbing among them: it keeps its code, guarded)."""
    forbidden, elsewhere = set(), set()

    def visit(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}.{node.name}"
                if policy.forbidden(stem, name) and not policy.plumbing(name):
                    forbidden.update(_statements(ast.Module(node.body, [])))
                    continue
                visit(node.body, name)
            elif not isinstance(node, ast.Expr):
                elsewhere.update(_statements(node))

    for module, tree in _original_trees().items():
        if policy.forbidden(stem, module):
            continue  # a module forbidden whole: its definitions, below, and what it keeps
        visit(tree.body, module)
    for module, tree in _original_trees().items():
        if policy.forbidden(stem, module):
            visit(tree.body, module)
    return forbidden, elsewhere


#: Texts whose reading needs the integer algebra: an index condition solved by the Smith normal form, a sum's range
#: bounded by Fourier-Motzkin elimination.
PARSED = {"dx[b] = if {(b + 2) % 4 = 0} then (df[(b + 2) / 2 - 1]) else (0)": {"dx": (6,), "df": (3,)},
          "f[i] = sum{k}_0^3 (x[2 * i + k])": {"f": (4,), "x": (10,)}}
PLUMBING_SCRIPT = r'''
import json, sys
import tensoradbook as tab
from tensoradbook.exercises import policy
from tensoradbook.integer import fourier_motzkin as fm, smith
if sys.argv[1] == "enforce":
    policy.enforce(sys.argv[2], anywhere=True)
read = [str(tab.parse(text, shapes)) for text, shapes in json.loads(sys.argv[3]).items()]
refused = {}
for name, call in [("integer_inverse", lambda: smith.integer_inverse([[2]])),
                   ("smith_normal_form", lambda: smith.smith_normal_form([[2, 4]])),
                   ("fourier_motzkin", lambda: fm.fourier_motzkin([[1, 0], [0, 1]]))]:
    try:
        call()
        refused[name] = False
    except policy.LibraryPolicyError:
        refused[name] = True
print(json.dumps({"read": read, "refused": refused}))
'''


@pytest.mark.parametrize("stem", STEMS)
@pytest.mark.parametrize("where", ["enforce", "copy"])
def test_the_parser_reads_every_function_and_the_student_is_still_refused(stem, where, copies, tmp_path):
    """The language's own calls of the integer algebra (PLUMBING) run under every policy, in the student's kernel and
    in the sandbox's copy; the student's own call of a forbidden part of it is refused there all the same."""
    env = {**os.environ, "PYTHONPATH": str(copies(stem).parent)} if where == "copy" else dict(os.environ)
    done = subprocess.run([sys.executable, "-c", PLUMBING_SCRIPT, where, stem, json.dumps(PARSED)], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["read"] == [str(tab.parse(text, shapes)) for text, shapes in PARSED.items()]
    for name, refused in result["refused"].items():
        qualified = next(f"{m}.{name}" for m in ("tensoradbook.integer.smith", "tensoradbook.integer.fourier_motzkin")
                         if hasattr(importlib.import_module(m), name))
        assert refused == policy.forbidden(stem, qualified), (name, result)


def test_plumbing_covers_what_the_language_imports_of_the_forbidden():
    """Every name the expression language and the integer algebra import that some policy forbids is plumbing: else
    parsing would fail under that policy."""
    for stem in STEMS:
        for module, tree in _original_trees().items():
            if not module.startswith(("tensoradbook.lang", "tensoradbook.integer")) or policy.forbidden(stem, module):
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.level:
                    base = module.rsplit(".", node.level)[0] + (f".{node.module}" if node.module else "")
                    for alias in node.names:
                        name = f"{base}.{alias.name}"
                        assert not policy.forbidden(stem, name) or policy.plumbing(name), (stem, module, name)


@pytest.mark.parametrize("stem", STEMS)
def test_the_forbidden_code_is_not_in_the_copy(stem, copies):
    package = copies(stem)
    in_copy = set().union(*(_statements(ast.parse(p.read_text())) for p in package.rglob("*.py")))
    forbidden, elsewhere = _forbidden_bodies(stem)
    distinctive = forbidden - elsewhere
    assert len(distinctive) > 50
    left = distinctive & in_copy
    assert not left, f"{len(left)} statements of forbidden code in the copy, e.g. {sorted(left)[:2]}"


def test_derive_has_no_trace_in_its_copy(copies):
    text = (copies("05_elementwise_derivatives") / "ad" / "derive.py").read_text()
    original = (SOURCE / "ad" / "derive.py").read_text()
    for line in ("return program_gradients(fn, wrt, derive_function)", "sweep = reverse_accumulate(fn.body, seed)",
                 "functions[name] = gradient_function(fn, gradient, beta, parts, gradient_shapes, hoisted=False)"):
        assert line in original and line not in text
    assert "def derive(fn, shapes=None, *, wrt=None):" in text and "LibraryPolicyError" in text
    # 07 allows derive: its copy keeps it, with the report of its use in front
    text = (copies("07_higher_order") / "ad" / "derive.py").read_text()
    assert "return program_gradients(fn, wrt, derive_function)" in text and policy.USE_EVENT in text


@pytest.mark.parametrize("stem", ["04a_integer_equations", "11_capstone_cnn", "12_build_it_yourself"])
def test_the_checks_are_stubs_in_the_copy(stem, copies):
    """Every function and method of tensoradbook.exercises is a stub (what the stem allows aside), their data
    tables are gone, NO_SOLUTION stays; the policy module is the package's, knowing its assignment."""
    package = copies(stem)
    stub = ast.parse(lp._STUB.format(event="E", name="N", stem="S", package="tensoradbook")).body
    shape = [type(s).__name__ for s in stub]
    allowed = set(policy.ALLOWED.get(stem, ()))
    for path in sorted((package / "exercises").glob("*.py")):
        module = lp._module_name(package, path)
        if module in policy.EXEMPT:
            assert path.read_text() == (SOURCE / "exercises" / "policy.py").read_text().replace(
                lp.SANDBOX_LINE, f"SANDBOX_STEM: str | None = {stem!r}")
            continue
        definitions = [(module, node) for node in ast.parse(path.read_text()).body]
        while definitions:
            prefix, node = definitions.pop()
            name = f"{prefix}.{getattr(node, 'name', '')}"
            if isinstance(node, ast.ClassDef):
                definitions += [(name, child) for child in node.body]
            elif isinstance(node, ast.FunctionDef) and name not in allowed:
                body = node.body if node.name == "__new__" else node.body[1:]  # the docstring
                assert [type(s).__name__ for s in body] == shape, name
    assert "LAYERS" not in (package / "exercises" / "ch11_capstone.py").read_text()
    assert "BOX_CASES" not in (package / "exercises" / "ch12_build.py").read_text()
    assert "NO_SOLUTION = 'no solution'" in (package / "exercises" / "answers.py").read_text()
    for name in allowed:  # a helper of the checks that the assignment gives keeps its code
        module, _, attribute = name.rpartition(".")
        if module.startswith("tensoradbook.exercises."):
            path = package.joinpath(*module.split(".")[1:]).with_suffix(".py")
            node = next((n for n in ast.parse(path.read_text()).body if getattr(n, "name", None) == attribute), None)
            assert node is None or [type(s).__name__ for s in node.body[1:]] != shape, name


def test_the_copy_is_cached_by_content_with_modes_for_everyone(tmp_path):
    source = tmp_path / "src" / "tensoradbook"
    shutil.copytree(SOURCE, source, ignore=shutil.ignore_patterns("__pycache__"))
    into = tmp_path / "copies"
    first = lp.sandbox_package("09a_jacobian_chaining", into, source)
    assert first.name == "tensoradbook" and first.parent.parent == into
    made = first.stat().st_mtime_ns
    assert lp.sandbox_package("09a_jacobian_chaining", into, source) == first and first.stat().st_mtime_ns == made
    for path in [first.parent, *first.parent.rglob("*")]:
        assert stat.S_IMODE(path.stat().st_mode) == (0o755 if path.is_dir() else 0o644), path
    assert not list(first.rglob("__pycache__")) and not list(into.glob(".*")), "no bytecode, no temporary folder"
    assert sorted(p.relative_to(first) for p in first.rglob("*.py")) == sorted(
        p.relative_to(source) for p in source.rglob("*.py"))
    # a change of the sources is a new copy; another assignment another one
    with (source / "chaining" / "chain.py").open("a") as file:
        file.write("\n# changed\n")
    second = lp.sandbox_package("09a_jacobian_chaining", into, source)
    assert second != first and first.is_dir()
    assert lp.sandbox_package("09b_tape_bounds", into, source) not in (first, second)
    with pytest.raises(ValueError, match="no library policy"):
        lp.sandbox_package("13_no_such_chapter", into, source)


def test_a_policy_that_names_what_is_not_there_is_refused(tmp_path):
    source = tmp_path / "src" / "tensoradbook"
    shutil.copytree(SOURCE, source, ignore=shutil.ignore_patterns("__pycache__"))
    path = source / "exercises" / "policy.py"
    text = path.read_text()
    old = '("tensoradbook.ad.reverse",))'
    assert text.count(old) == 1
    path.write_text(text.replace(old, '("tensoradbook.ad.reverse", "tensoradbook.ad.derive.no_such_function"))'))
    with pytest.raises(ValueError, match="no_such_function"):
        lp.sandbox_package("02_reverse_accumulation", tmp_path / "copies", source)


# --- a stub keeps the signature (hypothesis) --------------------------------------------------------------------

NAMES = [f"p{k}" for k in range(8)]
LITERALS = st.one_of(st.integers(-5, 5), st.text("ab", max_size=2), st.none(), st.tuples(st.integers(0, 2)),
                     st.floats(allow_nan=False, allow_infinity=False, width=16))


@st.composite
def signatures(draw) -> str:
    """A parameter list: positional-only, ordinary (defaults from the first one with a default on), *args or a
    bare *, keyword-only with or without defaults, **kwargs."""
    names = iter(draw(st.permutations(NAMES)))
    positional = [next(names) for _ in range(draw(st.integers(0, 4)))]
    first_default = draw(st.integers(0, len(positional)))
    parts = [p if k < first_default else f"{p}={draw(LITERALS)!r}" for k, p in enumerate(positional)]
    if parts and draw(st.booleans()):
        parts.insert(draw(st.integers(1, len(parts))), "/")
    keyword = [next(names) for _ in range(draw(st.integers(0, 2)))]
    star = draw(st.sampled_from(["", "*args"] + (["*"] if keyword else [])))
    if keyword and not star:
        star = "*"
    parts += [star] if star else []
    parts += [k if draw(st.booleans()) else f"{k}={draw(LITERALS)!r}" for k in keyword]
    parts += ["**kwargs"] if draw(st.booleans()) else []
    return ", ".join(parts)


def _stubbed(source: str, module: str = "tensoradbook.exercises.generated") -> dict:
    stubs = lp.ModuleStubs(lp.load_policy(SOURCE), "03_tensor_functions", module, set())
    text = stubs.text(source)
    assert "SECRET" not in text
    namespace = {"__name__": module}
    exec(compile(text, module, "exec"), namespace)  # noqa: S102 -- generated above
    return namespace


def _same_parameters(left, right) -> bool:
    return [(p.name, p.kind, p.default) for p in inspect.signature(left).parameters.values()] == [
        (p.name, p.kind, p.default) for p in inspect.signature(right).parameters.values()]


def _refused(call, name: str) -> bool:
    try:
        call()
    except policy.LibraryPolicyError as error:
        return name in str(error)
    return False


@settings(max_examples=60, deadline=None, derandomize=True)
@given(signatures())
def test_a_stub_keeps_the_parameters_and_refuses(parameters):
    source = f"def f({parameters}):\n    'the docstring'\n    return SECRET + 1\n"
    original = {}
    exec(source, original)  # noqa: S102 -- generated above
    stub = _stubbed(source)["f"]
    assert _same_parameters(original["f"], stub)
    bound = {p.name: None for p in inspect.signature(stub).parameters.values()
             if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    positional = [bound.pop(p.name) for p in inspect.signature(stub).parameters.values()
                  if p.kind == p.POSITIONAL_ONLY and p.name in bound]
    assert _refused(lambda: stub(*positional, **bound), "tensoradbook.exercises.generated.f")


@settings(max_examples=30, deadline=None, derandomize=True)
@given(signatures(), st.sampled_from(["", "@staticmethod", "@classmethod", "@property", "@functools.cached_property"]))
def test_a_class_stub_refuses_instances_and_keeps_its_methods_shape(parameters, decorator):
    first = {"@staticmethod": "", "@classmethod": "cls"}.get(decorator, "self")
    parameters = "" if "property" in decorator else parameters
    source = textwrap.dedent(f"""
        import functools
        from typing import NamedTuple

        class Base:
            pass

        class C(Base):
            'the class'
            x: int = 3

            {decorator}
            def m({", ".join(p for p in (first, parameters) if p)}):
                return SECRET

        class T(NamedTuple):
            a: int = SECRET
        """)
    namespace = _stubbed(source)
    C, name = namespace["C"], "tensoradbook.exercises.generated.C"
    assert issubclass(C, namespace["Base"])
    assert _refused(C, name) and _refused(lambda: namespace["T"](1), "tensoradbook.exercises.generated.T")
    member = inspect.getattr_static(C, "m")
    if "property" in decorator:
        assert isinstance(member, property)
        assert _refused(lambda: member.fget(None), f"{name}.m")
        return
    if decorator:
        assert isinstance(member, staticmethod if decorator == "@staticmethod" else classmethod)
    method = C.m
    call = inspect.signature(method).parameters.values()
    args = [None for p in call if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    kwargs = {p.name: None for p in call if p.default is p.empty and p.kind == p.KEYWORD_ONLY}
    assert _refused(lambda: method(*args, **kwargs), f"{name}.m")
