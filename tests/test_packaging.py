"""Packaging: the editable install, the wheel, the core/widgets split, environment.yml."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "tensoradbook"
WIDGETS = REPO / "widgets"
# What the core library must never import (it has to run without Jupyter).
FRONTEND = {
    "ipywidgets", "IPython", "ipykernel", "matplotlib", "jupyter", "jupyterlab",
    "jupyter_client", "jupyter_core", "jupyter_server", "notebook", "nbformat",
    "traitlets", "comm", "widgets",
}
# What the core computes with; the standard library aside, it imports nothing else.
CORE_DEPENDENCIES = {"numpy", "sympy", "numba"}
# The optional framework modules, which import their framework when imported (the models extra) and
# which `import tensoradbook` never loads, so the core runs without PyTorch or JAX.
FRAMEWORK_MODULES = {CORE / "torch.py": {"torch"}, CORE / "jax.py": {"jax", "jaxlib"}}
FRAMEWORKS = {"torch", "jax", "jaxlib"}


def _pyproject() -> dict:
    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def test_widgets_import_from_the_repository():
    import tensoradbook
    import tensoradbook.widgets

    assert Path(tensoradbook.__file__).resolve().parent == CORE
    assert Path(tensoradbook.widgets.__file__).resolve().parent == WIDGETS


def test_core_imports_no_frontend_module():
    code = (
        "import sys, tensoradbook\n"
        "print('\\n'.join(sorted(m for m in sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=REPO
    ).stdout.split()
    loaded = {m.split(".")[0] for m in out}
    assert not (loaded & FRONTEND), f"importing tensoradbook loads {sorted(loaded & FRONTEND)}"
    assert not (loaded & FRAMEWORKS), f"importing tensoradbook loads {sorted(loaded & FRAMEWORKS)}"
    assert "tensoradbook.widgets" not in out
    assert not {"tensoradbook.torch", "tensoradbook.jax"} & set(out)


def _imported_modules(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                yield node.lineno, node.module
            elif node.level > 0 and (node.module or "").split(".")[0] == "widgets":
                yield node.lineno, "widgets"
            elif node.level > 0:
                for alias in node.names:
                    if alias.name == "widgets":
                        yield node.lineno, "widgets"


def test_core_sources_import_no_frontend_module():
    bad = []
    for path in sorted(CORE.rglob("*.py")):
        for lineno, module in _imported_modules(path):
            top = module.split(".")[0]
            if top in FRONTEND or module.startswith("tensoradbook.widgets"):
                bad.append(f"{path.relative_to(REPO)}:{lineno}: import {module}")
    assert not bad, "the core must not import Jupyter/plotting/widgets:\n" + "\n".join(bad)


def test_core_sources_import_only_numpy_sympy_numba():
    """Every import in tensoradbook/ is of the standard library, of the package itself or of numpy, sympy
    and numba; only the framework modules add theirs (tensoradbook/torch.py PyTorch, jax.py JAX)."""
    bad = []
    for path in sorted(CORE.rglob("*.py")):
        allowed = CORE_DEPENDENCIES | sys.stdlib_module_names | FRAMEWORK_MODULES.get(path, set())
        for lineno, module in _imported_modules(path):
            top = module.split(".")[0]
            if top not in allowed and top != "tensoradbook":
                bad.append(f"{path.relative_to(REPO)}:{lineno}: import {module}")
    assert not bad, "the core imports only numpy, sympy and numba:\n" + "\n".join(bad)
    assert set(FRAMEWORK_MODULES) <= set(CORE.rglob("*.py")), "the framework modules moved: update FRAMEWORK_MODULES"


def test_wheel_contains_core_and_widgets(tmp_path):
    # Build from a copy of the working tree: setuptools writes build/ and *.egg-info
    # next to pyproject.toml, and the checkout must stay untouched.
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "screenshots", "__pycache__",
        ".hypothesis", ".pytest_cache", ".ipynb_checkpoints", ".numba_cache",
    ))
    dist = tmp_path / "dist"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--quiet", "-w", str(dist), str(src)],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheels = list(dist.glob("tensoradbook-*.whl"))
    assert len(wheels) == 1, wheels
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    expected = {"tensoradbook/widgets/__init__.py"}
    expected |= {f"tensoradbook/{p.relative_to(CORE).as_posix()}" for p in CORE.rglob("*.py")}
    expected |= {f"tensoradbook/widgets/{p.relative_to(WIDGETS).as_posix()}" for p in WIDGETS.rglob("*.py")}
    assert "tensoradbook/__init__.py" in expected
    assert not (expected - names), f"missing from the wheel: {sorted(expected - names)}"


# --- environment.yml and pyproject.toml in step ---------------------------------

# Extras environment.yml leaves out: the PTX compiler (~450 MB, CI's compile check) and the benchmark
# peers (PyTorch, JAX, which the models extra, chapters 10 and 11 need, brings anyway);
# `pip install -e '.[cuda,bench]'` adds them.
OPTIONAL_EXTRAS = {"cuda", "bench"}
# conda-forge names that differ from PyPI's: its CPU build of PyTorch is `pytorch`
CONDA_NAMES = {"pytorch": "torch"}


def _pyproject_requirements() -> dict[str, SpecifierSet]:
    project = _pyproject()["project"]
    reqs = list(project["dependencies"])
    for name, extra in project.get("optional-dependencies", {}).items():
        if name not in OPTIONAL_EXTRAS:
            reqs += extra
    out: dict[str, SpecifierSet] = {}
    for r in map(Requirement, reqs):
        name = canonicalize_name(r.name)
        if name == "tensoradbook":  # self-references such as tensoradbook[lab]
            continue
        assert name not in out or out[name] == r.specifier, f"{name} listed twice, differently"
        out[name] = r.specifier
    return out


_CONDA_SPEC = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*)$")


def _environment() -> tuple[dict[str, SpecifierSet], list[str]]:
    yaml = pytest.importorskip("yaml", reason="PyYAML comes with the test extra (make install)")
    env = yaml.safe_load((REPO / "environment.yml").read_text(encoding="utf-8"))
    specs: dict[str, SpecifierSet] = {}
    local: list[str] = []

    def add(name: str, spec: str):
        name = canonicalize_name(CONDA_NAMES.get(name, name))
        assert name not in specs, f"environment.yml lists {name} twice"
        specs[name] = SpecifierSet(spec.replace(" ", ""))

    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            for line in dep.get("pip", []):
                line = str(line).strip()
                if line.startswith(("-e", ".", "/")):
                    local.append(line)
                    continue
                r = Requirement(line)
                add(r.name, str(r.specifier))
        else:
            m = _CONDA_SPEC.match(str(dep))
            assert m, f"cannot read conda spec {dep!r}"
            name, spec = m.groups()
            if "=" in spec and not re.search(r"[<>!=]=|[<>]", spec):  # conda's "pkg=1.2" pin
                spec = "==" + spec.lstrip("=") + ".*"
            add(name, spec)
    return specs, local


def test_environment_yml_matches_pyproject():
    py = _pyproject_requirements()
    env, local = _environment()
    requires_python = SpecifierSet(_pyproject()["project"]["requires-python"])
    # Binder reads the version only from a conda pin `python=X.Y`: the oldest Python that requires-python admits.
    oldest = min(f"3.{minor}" for minor in range(8, 20) if requires_python.contains(f"3.{minor}"))
    assert env.pop("python", None) == SpecifierSet(f"=={oldest}.*"), (
        f"environment.yml must pin python={oldest} (Binder's form), the oldest that requires-python "
        f"{requires_python} admits"
    )
    env.pop("pip", None)
    missing = sorted(set(py) - set(env))
    extra = sorted(set(env) - set(py))
    assert not missing, f"in pyproject.toml but not in environment.yml: {missing}"
    assert not extra, f"in environment.yml but not in pyproject.toml: {extra}"
    def same(pip: SpecifierSet, conda: SpecifierSet) -> bool:
        # a pip pin ==X.Y.Z that conda-forge takes as X.Y.* (its build of that release) is the same requirement
        pins = [spec.version for spec in pip if spec.operator == "=="]
        return pip == conda or (len(pins) == 1 and len(pip) == 1 and conda.contains(pins[0]))

    differ = {n: (str(py[n]), str(env[n])) for n in py if not same(py[n], env[n])}
    assert not differ, f"versions differ (pyproject, environment.yml): {differ}"
    assert any(re.fullmatch(r"-e\s+\.(\[.*\])?", l) for l in local), (
        "environment.yml must install the book itself with `pip: - -e .`"
    )
