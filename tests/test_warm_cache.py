"""The warm kernel cache of a class (classroom/warm_cache.py): compiled once, read by every user.

One demo (06_gradient_lab, the smallest with kernels of its own: one module, its kernels fused into two) is warmed
into a folder as ``make hub`` warms every chapter and demo. Then another Unix user, with an empty private cache and
``TENSORADBOOK_SHARED_CACHE`` naming the warm one, does what the demo's page does: no Numba dispatcher of that process
missed its disk cache (Numba counts a miss for every signature it compiles), the private cache holds the shared
module and Numba's files for it byte for byte and nothing else, and the user cannot write the shared cache.

Acting as another user needs root (CI runs the tests as root): elsewhere those tests skip, saying so, and under
``CI=true`` they fail.
"""

import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import IN_CI
from test_cache import system_user

from classroom.hub import thread_environment

REPO = Path(__file__).resolve().parents[1]
DEMO = "06_gradient_lab"

#: The demo's first interaction as its page does it, run by another user: what Numba compiled meanwhile, what the
#: private cache holds and which writes into the shared cache were refused. The process starts as root and does it
#: once on a cache of its own, so that what Python imports on the way is imported (the venv's interpreter may live
#: where the user cannot reach, under /root); then it forgets every kernel it loaded (the widgets' memos, the cache's
#: modules), becomes the user with a home of its own and does it again.
STUDENT = """
import functools, gc, json, os, sys
from pathlib import Path

import numba.core.dispatcher

from classroom.demo import DEMOS, warm
from tensoradbook.codegen import cache

demo = [d for d in DEMOS if d.stem == sys.argv[1]]
uid, gid, home = json.loads(sys.argv[2])

def misses():
    return {d: sum(d.stats.cache_misses.values()) for d in gc.get_objects()
            if isinstance(d, numba.core.dispatcher.Dispatcher)}

warm(demo)
for memo in gc.get_objects():
    if isinstance(memo, functools._lru_cache_wrapper):
        memo.cache_clear()
cache._MODULES.clear()
before = misses()  # holding the dispatchers: none is freed and its id reused
os.environ.pop("TENSORADBOOK_CACHE")
os.environ["HOME"] = home
os.setgroups([])
os.setgid(gid)
os.setuid(uid)
warm(demo)
private = cache.cache_directory()
after = misses()
kernels = [d for d in after if d.py_func.__code__.co_filename.startswith(str(private))]
shared = Path(os.environ["TENSORADBOOK_SHARED_CACHE"])
refused = []
for attempt in [lambda: (shared / "planted.py").write_text(""),
                lambda: (shared / "__pycache__" / "planted.nbi").write_bytes(b""),
                lambda: open(next(shared.glob("k_*.py")), "a").close(),
                lambda: next(shared.glob("k_*.py")).unlink()]:
    try:
        attempt()
    except PermissionError:
        refused.append(True)
    else:
        refused.append(False)
print(json.dumps({
    "kernels": sum(len(d.overloads) for d in kernels),
    "hits": sum(sum(d.stats.cache_hits.values()) for d in kernels),
    "compiled": {d.py_func.__qualname__: n - before.get(d, 0) for d, n in after.items() if n > before.get(d, 0)},
    "private": str(private),
    "files": {str(p.relative_to(private)): p.read_bytes().hex() for p in private.rglob("*")
              if p.is_file() and p.suffix != ".pyc"},
    "refused": refused,
}))
"""


def listing(directory: Path) -> dict:
    """Every file and folder under ``directory``: owner, mode and modification time."""
    return {str(p.relative_to(directory)): (p.stat().st_uid, p.stat().st_mode & 0o7777, p.stat().st_mtime_ns)
            for p in [directory, *directory.rglob("*")]}


def warm(directory: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "classroom.warm_cache", "--into", str(directory), "--only", DEMO],
                          cwd=REPO, capture_output=True, text=True, check=True)


@pytest.fixture(scope="module")
def shared():
    """A warm cache of the demo, in a folder every user can reach (pytest's own temporary folders are private)."""
    parent = Path(tempfile.mkdtemp(prefix="tab-warm-test-", dir=os.path.realpath(tempfile.gettempdir())))
    parent.chmod(0o755)
    directory = parent / "kernel-cache"
    done = warm(directory)
    yield directory, done.stdout
    shutil.rmtree(parent)


def test_the_warm_cache_holds_the_demos_kernels_and_only_its_owner_may_write_it(shared):
    directory, output = shared
    assert f"{DEMO}:" in output
    modules, kernels = re.fullmatch(rf"{directory}: (\d+) modules, (\d+) kernels, .*", output.splitlines()[-1]).groups()
    assert int(modules) >= 1 and int(kernels) >= 1
    assert list(directory.glob("k_*.py")) and list(directory.glob("__pycache__/k_*.nbi"))
    entries = listing(directory)
    for name, (owner, mode, _) in entries.items():
        assert owner == os.getuid(), name
        assert mode == (0o755 if (directory / name).is_dir() else 0o644), name
    again = warm(directory)
    assert "is warm already" in again.stdout and f"{DEMO}:" not in again.stdout
    assert listing(directory) == entries


def test_an_unknown_stem_is_refused_with_the_names_there_are():
    done = subprocess.run([sys.executable, "-m", "classroom.warm_cache", "--into", "/nonexistent", "--only", "nope"],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode != 0
    assert "no chapter or demo nope" in done.stderr and DEMO in done.stderr and "06a_kernels" in done.stderr


@pytest.fixture(scope="module")
def another_user():
    if os.getuid() != 0:
        message = "needs root: to make another user and act as one"
        if IN_CI:
            pytest.fail(f"CI runs the tests as root: {message}")
        pytest.skip(message)
    return system_user("tab-warm-student")


def new_home(user) -> Path:
    """A home of ``user``'s own (empty: no cache of theirs yet), where every user can reach it."""
    directory = Path(tempfile.mkdtemp(prefix="tab-warm-home-", dir=os.path.realpath(tempfile.gettempdir())))
    os.chown(directory, user.pw_uid, user.pw_gid)
    return directory


@pytest.fixture
def home(another_user):
    directory = new_home(another_user)
    yield directory
    shutil.rmtree(directory)


@pytest.fixture(scope="module")
def student(shared, another_user):
    """The demo's page run by another user with an empty private cache and the warm cache shared: STUDENT's report."""
    directory, _ = shared
    home = new_home(another_user)
    before = listing(directory)
    # a student's server: the hub's thread settings, the warm cache shared, no cache of its own yet
    env = {key: value for key, value in os.environ.items()
           if key not in ("XDG_CACHE_HOME", "NUMBA_CACHE_DIR", "MPLCONFIGDIR")}
    env.update(thread_environment(1), TENSORADBOOK_SHARED_CACHE=str(directory),
               TENSORADBOOK_CACHE=str(home.with_name(home.name + "-root")))
    try:
        done = subprocess.run([sys.executable, "-c", STUDENT, DEMO, json.dumps([another_user.pw_uid,
                                                                                another_user.pw_gid, str(home)])],
                              cwd=REPO, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        yield directory, before, home, json.loads(done.stdout.splitlines()[-1])
    finally:
        shutil.rmtree(env["TENSORADBOOK_CACHE"], ignore_errors=True)
        shutil.rmtree(home)


def test_another_user_runs_the_demo_on_the_warm_kernels_without_compiling_one(student):
    directory, before, home, report = student
    # the demo's kernels ran (its serial ones as one fused function), loaded from Numba's disk cache
    assert report["kernels"] >= 2 and report["hits"] == report["kernels"]
    assert report["compiled"] == {}  # Numba compiled nothing: every signature came from its disk cache
    assert report["private"] == str(home / ".cache" / "tensoradbook" / "kernels")
    copied = {name: bytes.fromhex(data) for name, data in report["files"].items()}
    assert copied == {str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*")
                      if p.is_file() and p.suffix != ".pyc" and p.name != ".warm-stamp.json"}
    assert listing(directory) == before


def test_another_user_cannot_write_the_warm_cache(student):
    directory, before, _, report = student
    assert report["refused"] == [True] * 4
    assert listing(directory) == before


#: The package's own njit(cache=True) function mark_useful, called as root (Numba caches it beside the package, which
#: a package installed by root keeps from other users), then as the other user decorated anew with package_jit:
#: Numba picks the cache where a function is decorated, as the user's own import of the package would.
PACKAGE_PROBE = """
import json, os, sys

import numpy as np

from tensoradbook.codegen.cache import package_jit
from tensoradbook.inverse import engine

uid, gid, home = json.loads(sys.argv[1])
args = (np.array([engine.INPUT, engine.INPUT, engine.ADD]), np.array([0, 0, 0]), np.array([0, 0, 1]), 2, np.array([2]))
engine.mark_useful(*args)
os.environ["HOME"] = home
os.setgroups([])
os.setgid(gid)
os.setuid(uid)
fresh = package_jit(error_model="numpy")(engine.mark_useful.py_func)
useful = fresh(*args)
print(json.dumps({"useful": useful.tolist(), "locator": type(fresh._cache._impl.locator).__name__,
                  "path": fresh._cache._cache_path, "hits": sum(fresh.stats.cache_hits.values()),
                  "misses": sum(fresh.stats.cache_misses.values())}))
"""


def test_another_user_loads_the_packages_own_kernels_from_beside_the_package(another_user, home):
    env = {key: value for key, value in os.environ.items()
           if key not in ("TENSORADBOOK_CACHE", "XDG_CACHE_HOME", "NUMBA_CACHE_DIR")}
    done = subprocess.run([sys.executable, "-c", PACKAGE_PROBE,
                           json.dumps([another_user.pw_uid, another_user.pw_gid, str(home)])],
                          cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["useful"] == [1, 1, 1]
    assert report["locator"] == "PackageCacheLocator"  # tensoradbook.codegen.cache.package_jit's
    assert Path(report["path"]).parent == home / ".cache" / "tensoradbook" / "kernels" / "package"
    assert report["hits"] == 1 and report["misses"] == 0  # the package's machine code, copied, not compiled
