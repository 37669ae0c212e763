"""Whom the kernel cache trusts (tensoradbook.codegen.cache, classroom/warm_cache.py): one test per attack.

* ``NUMBA_CACHE_DIR`` made first by another user, Numba's index files of the victim's functions planted in it (a
  pickle runs code when loaded): neither the package's own functions nor a generated module's kernels read it.
* ``TENSORADBOOK_SHARED_CACHE`` owned by a user no one configured is refused; ``TENSORADBOOK_SHARED_CACHE_OWNER``
  naming that user makes it trusted.
* The warm-up shares only what it made: a file, a link or a hard link another user planted in the warm cache is named
  and left as it is (never chowned, never chmodded, never followed).

Acting as other users needs root (CI runs the tests as root); elsewhere these tests skip.
"""

import ast
import json
import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from numba.core.caching import UserProvidedCacheLocator
import test_cache
from test_cache import SHAPES, TEXTS, arguments, module_name

import tensoradbook as tab
from classroom import warm_cache
from tensoradbook.codegen import cache
from tensoradbook.codegen.cache import KernelCacheWarning
from tensoradbook.inverse import engine

REPO = Path(__file__).resolve().parents[1]
#: test_cache's fixtures, here too: the cache's state reset for each test (autouse), and a folder as /tmp is
fresh_cache, public_tmp = test_cache.fresh_cache, test_cache.public_tmp
intruder, victim = test_cache.intruder, test_cache.victim


class Runs:
    """Unpickled, it appends to ``marker``: what a planted index or data file does to whoever loads it."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'a').write('ran')",)


def numba_bases(source: str, stem: str) -> list[str]:
    """The names Numba gives the index of each cached function of module ``stem`` (``source``), less ``.nbi``:
    module, function and the line of its first decorator, this Python."""
    return [f"{stem}.{node.name}-{node.decorator_list[0].lineno}.{cache._NUMBA_TAG}"
            for node in ast.parse(source).body
            if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list)]


def plant_numba_cache(directory: Path, functions: dict[Path, list[str]], marker: Path, owner) -> None:
    """``directory`` made by ``owner``, open to all (as a victim's Numba needs it, to write there), holding an index
    and a data file that mark ``marker`` for each function of each source file, where Numba's
    ``NUMBA_CACHE_DIR`` locator looks for them."""
    folders = [directory]
    for source, bases in functions.items():
        folder = directory / UserProvidedCacheLocator.get_suitable_cache_subpath(str(source))
        folder.mkdir(parents=True, exist_ok=True)
        folders.append(folder)
        for base in bases:
            for name in (f"{base}.nbi", f"{base}.1.nbc"):
                (folder / name).write_bytes(pickle.dumps(Runs(marker)))
                os.chown(folder / name, owner.pw_uid, owner.pw_gid)
    for folder in folders:
        folder.chmod(0o777)
        os.chown(folder, owner.pw_uid, owner.pw_gid)


#: The victim's session: as root first (what Python imports on the way is imported: the interpreter may live where the
#: victim cannot reach), a kernel of ``text`` compiled and the package's mark_useful run, with no NUMBA_CACHE_DIR;
#: then the victim, with the environment given (its cache, the planted NUMBA_CACHE_DIR) read by Numba again, compiles
#: ``text`` and decorates mark_useful anew (as its own import of the package would), and runs both.
VICTIM = """
import json, os, sys

import numba
import numpy as np

import tensoradbook as tab
from tensoradbook.codegen import cache
from tensoradbook.codegen.cache import package_jit
from tensoradbook.inverse import engine

job = json.loads(sys.argv[1])
fn = tab.parse(job["text"], job["shapes"])
args = {name: np.linspace(0.5, 1.5, int(np.prod(fn.shapes[name]))).reshape(fn.shapes[name]) for name in fn.arguments}
program = (np.array([engine.INPUT, engine.INPUT, engine.ADD]), np.array([0, 0, 0]), np.array([0, 0, 1]), 2,
           np.array([2]))
fn.compile(job["target"])(args)
engine.mark_useful(*program)
cache._MODULES.clear()
os.environ.update(job["env"])
numba.core.config.reload_config()
os.setgroups([])
os.setgid(job["user"][1])
os.setuid(job["user"][0])
compiled = fn.compile(job["target"])
useful = package_jit(error_model="numpy")(engine.mark_useful.py_func)
dispatchers = [k for k in vars(compiled.module).values() if hasattr(k, "py_func")] + [useful]
print(json.dumps({"same": bool(np.allclose(compiled(args), fn.evaluate(args))), "useful": useful(*program).tolist(),
                  "caches": [getattr(getattr(d, "_cache", None), "_cache_path", None) for d in dispatchers]}))
"""


@pytest.mark.parametrize("target, locators", [
    ("numba", None),
    ("numba", "UserProvidedCacheLocator,InTreeCacheLocator,UserWideCacheLocator"),
    ("cuda", None),  # numba-cuda's own locators on a GPU; on the simulator nothing is cached
], ids=["numba", "numba, NUMBA_CACHE_LOCATOR_CLASSES", "cuda"])
def test_a_planted_numba_cache_dir_is_never_read(tmp_path, public_tmp, intruder, victim, target, locators):
    """The attack: the victim sets ``NUMBA_CACHE_DIR`` (as a sandbox does, where ``$HOME`` is read-only); another
    user made that folder first, writable by all, with index and data files for the victim's functions where
    Numba's locator for it would look. Nothing of it is loaded (the mark never appears), the results are right, and
    the functions' machine code is kept in the victim's own cache, not there."""
    private = public_tmp / "victim-kernels"
    private.mkdir(mode=0o700)
    os.chown(private, victim.pw_uid, victim.pw_gid)
    source = tab.parse(TEXTS[0], SHAPES).kernel_source(target)
    name = module_name(TEXTS[0], target)
    package = Path(engine.mark_useful.py_func.__code__.co_filename)
    lineno = engine.mark_useful.py_func.__code__.co_firstlineno
    planted, marker = public_tmp / "numba", public_tmp / "marker"
    plant_numba_cache(planted, {private / f"{name}.py": numba_bases(source, name),
                                package: [f"{package.stem}.mark_useful-{lineno}.{cache._NUMBA_TAG}"]},
                      marker, intruder)
    env = {"TENSORADBOOK_CACHE": str(private), "NUMBA_CACHE_DIR": str(planted), "HOME": "/nonexistent"}
    if locators:
        env["NUMBA_CACHE_LOCATOR_CLASSES"] = locators
    job = {"text": TEXTS[0], "shapes": SHAPES, "target": target, "env": env, "user": [victim.pw_uid, victim.pw_gid]}
    process_env = {key: value for key, value in os.environ.items()
                   if key not in ("NUMBA_CACHE_DIR", "NUMBA_CACHE_LOCATOR_CLASSES", "XDG_CACHE_HOME")}
    process_env["TENSORADBOOK_CACHE"] = str(tmp_path / "root")
    done = subprocess.run([sys.executable, "-c", VICTIM, json.dumps(job)], env=process_env, capture_output=True,
                          text=True, cwd=REPO)
    assert not marker.exists(), done.stderr
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["same"] and report["useful"] == [1, 1, 1]
    *kernels, package = report["caches"]
    assert kernels and set(kernels) <= {str(private / "__pycache__"), None}  # None: the simulator's, not cached
    assert target == "cuda" or None not in kernels
    assert Path(package).parent == private / "package"


@pytest.mark.parametrize("configured, trusted", [
    (None, False), ("tab-cache-victim", False), ("tab-cache-nobody", False),
    ("tab-cache-intruder", True), ("uid", True),
], ids=["no owner named", "another user named", "no such user", "its owner named", "its owner's uid"])
def test_a_shared_cache_is_trusted_for_its_configured_owner_alone(tmp_path, public_tmp, monkeypatch, intruder,
                                                                  victim, configured, trusted):
    """The attack: whoever owns the folder ``$TENSORADBOOK_SHARED_CACHE`` names when it is read was trusted, so a
    user who made it first (or took its name) had their modules and Numba's index files loaded. Now the folder is
    trusted where it is root's, yours, or the user's ``$TENSORADBOOK_SHARED_CACHE_OWNER`` names (by name or uid):
    a warm module there is copied with Numba's index; else the folder is refused with a warning saying why, and the
    module is compiled in the private cache with nothing of the shared one."""
    shared = public_tmp / "shared"
    monkeypatch.setenv("TENSORADBOOK_CACHE", str(shared))
    first = tab.parse(TEXTS[0], SHAPES).compile("numpy")
    index = shared / "__pycache__" / f"{Path(first.path).stem}.forward-1.{cache._NUMBA_TAG}.nbi"
    index.parent.mkdir(exist_ok=True)
    index.write_bytes(pickle.dumps("0.68") + pickle.dumps(("stamp", {})))  # as Numba writes an index
    for path in [shared, *shared.rglob("*")]:
        os.chown(path, intruder.pw_uid, intruder.pw_gid)
    monkeypatch.setattr(cache, "_MODULES", {})
    monkeypatch.setenv("TENSORADBOOK_SHARED_CACHE", str(shared))
    if configured:
        monkeypatch.setenv("TENSORADBOOK_SHARED_CACHE_OWNER",
                           str(intruder.pw_uid) if configured == "uid" else configured)
    private = tmp_path / "mine"
    monkeypatch.setenv("TENSORADBOOK_CACHE", str(private))
    fn = tab.parse(TEXTS[0], SHAPES)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = fn.compile("numpy")
    messages = [str(w.message) for w in caught if issubclass(w.category, KernelCacheWarning)]
    args = arguments(fn)
    np.testing.assert_allclose(compiled(args), fn.evaluate(args))
    assert Path(compiled.path).parent == private
    copied = private / "__pycache__" / index.name
    if trusted:
        assert messages == [] and copied.read_bytes() == index.read_bytes()
        return
    assert not copied.exists()
    refused = (f"tensoradbook: the kernel cache {shared} is not used: {shared} belongs to tab-cache-intruder (a shared "
               "cache is trusted where it is root's, yours or the user's that TENSORADBOOK_SHARED_CACHE_OWNER names)")
    unknown = ("tensoradbook: TENSORADBOOK_SHARED_CACHE_OWNER=tab-cache-nobody names no user: only root and you are "
               "trusted in a shared cache")
    assert messages == ([unknown] if configured == "tab-cache-nobody" else []) + [refused]


def listing(directory: Path) -> dict:
    """Every entry under ``directory``, not followed: owner and mode."""
    return {str(path): (path.lstat().st_uid, path.lstat().st_mode & 0o7777)
            for path in [directory, *sorted(directory.rglob("*"))]}


def test_the_warm_up_shares_nothing_another_user_planted(public_tmp, intruder):
    """The attack: the warm-up (as root) chowned to itself what it found in the cache folder, so a module another
    user planted there became root's, which every student trusts. Now it changes nothing that it did not make: a
    file or folder of another user, a link (to a file of root's outside, which a chmod would follow) and a hard link
    (another name for root's file outside) stay as they were, are named in the error, and the folder is not shared;
    what the warm-up made is."""
    directory = public_tmp / "kernel-cache"
    (directory / "__pycache__").mkdir(parents=True)
    ours = directory / "k_ours.py"
    ours.write_text("")
    ours.chmod(0o600)
    secret = public_tmp / "secret"
    secret.write_text("root's alone")
    secret.chmod(0o600)
    planted = directory / "__pycache__" / "k_planted.nbi"
    planted.write_bytes(b"")
    planted.chmod(0o600)
    folder = directory / "planted"
    folder.mkdir(mode=0o700)
    link = directory / "k_link.py"
    link.symlink_to(secret)
    hard = directory / "k_hard.py"
    os.link(secret, hard)
    for path in (planted, folder, link):
        os.lchown(path, intruder.pw_uid, intruder.pw_gid)
    before = {**listing(directory), str(secret): (0, 0o600)}
    with pytest.raises(SystemExit) as refused:
        warm_cache._share(directory)
    message = str(refused.value)
    for path, why in [(planted, "belongs to tab-cache-intruder"), (folder, "belongs to tab-cache-intruder"),
                      (link, "belongs to tab-cache-intruder"), (hard, "has 1 other name(s) (hard links)")]:
        assert f"{path} {why}" in message
    assert message.startswith(f"error: {directory} is not shared")
    after = {**listing(directory), str(secret): (secret.stat().st_uid, secret.stat().st_mode & 0o7777)}
    assert after == {**before, str(directory): (0, 0o755), str(directory / "__pycache__"): (0, 0o755),
                     str(ours): (0, 0o644)}


@pytest.mark.parametrize("attack", ["another user's folder", "a link to root's folder", "a folder others can write"])
def test_the_warm_up_refuses_a_cache_folder_it_cannot_trust(public_tmp, intruder, attack):
    """The cache folder itself made first by another user, a link in its place, or open to all: refused before
    anything in it is read, changed or compiled, with the reason; nothing in it or behind the link changes."""
    directory = public_tmp / "kernel-cache"
    inside = public_tmp / "elsewhere" if attack == "a link to root's folder" else directory
    inside.mkdir()
    inside.chmod(0o777 if attack == "a folder others can write" else 0o700)
    (inside / "k_planted.py").write_text("")
    if attack == "another user's folder":
        os.chown(inside, intruder.pw_uid, intruder.pw_gid)
    if attack == "a link to root's folder":
        directory.symlink_to(inside)
    before = listing(inside)
    with pytest.raises(SystemExit) as refused:
        warm_cache.warm(directory, only=["06_gradient_lab"])
    why = {"another user's folder": "belongs to tab-cache-intruder", "a link to root's folder": "is a symbolic link",
           "a folder others can write": "can be written by its group and other users"}[attack]
    assert str(refused.value) == f"error: {directory} cannot be shared: {directory} {why}"
    assert listing(inside) == before


#: A generated CUDA module imported, not run (numba-cuda decorates its kernels without a GPU): which locator
#: numba-cuda picked for each kernel, and where it keeps the kernel's machine code.
CUDA_LOCATOR = """
import json, sys

import tensoradbook as tab
from tensoradbook.codegen import cache

module = cache.load_module(tab.parse(sys.argv[1], json.loads(sys.argv[2])).kernel_source("cuda"))
print(json.dumps([[type(k._cache._impl.locator).__name__, k._cache._cache_path] for k in vars(module).values()
                  if hasattr(k, "_cache")]))
"""


def test_numba_cuda_keeps_a_generated_kernel_beside_its_module(tmp_path):
    """numba-cuda has locators of its own, ``NUMBA_CACHE_DIR``'s first: for a generated CUDA kernel the package's is
    asked before them too, on a machine without a GPU as with one (numba-cuda itself, not its simulator, which caches
    nothing)."""
    pytest.importorskip("numba_cuda")
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_ENABLE_CUDASIM"}
    env.update(NUMBA_CACHE_DIR=str(tmp_path / "numba"), TENSORADBOOK_CACHE=str(tmp_path / "kernels"))
    done = subprocess.run([sys.executable, "-c", CUDA_LOCATOR, TEXTS[0], json.dumps(SHAPES)], env=env,
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    kernels = json.loads(done.stdout.splitlines()[-1])
    beside = str(Path(os.path.realpath(tmp_path)) / "kernels" / "__pycache__")
    assert kernels and all(kernel == ["PackageCacheLocator", beside] for kernel in kernels)
    assert not (tmp_path / "numba").exists()


@pytest.mark.parametrize("uid_map, maps", [
    (None, True), ("         0          0 4294967295\n", True), ("      1000       1000          1\n", False),
    ("         0       1000          1\n", True), ("      1000          0          1\n", False), ("", False),
])
def test_root_is_root_where_the_namespace_maps_it(uid_map, maps):
    assert cache._maps_root(uid_map) is maps


#: In bubblewrap's user namespace, as an ordinary user grades (root's files show as the overflow uid): the package's
#: own function and a generated kernel run from the private cache with no warning.
IN_A_NAMESPACE = """
import json, warnings
import numpy as np
warnings.simplefilter("error")
import tensoradbook as tab
from tensoradbook.inverse import engine
program = (np.array([engine.INPUT, engine.INPUT, engine.ADD]), np.array([0, 0, 0]), np.array([0, 0, 1]), 2,
           np.array([2]))
fn = tab.parse("f[i] = x[i] * 2", {"f": (3,), "x": (3,)})
args = {"x": np.arange(3.0)}
print(json.dumps({"useful": engine.mark_useful(*program).tolist(), "f": fn.compile("numba")(args).tolist()}))
"""


@pytest.mark.skipif(os.getuid() != 0, reason="creates a user to run bubblewrap as (CI runs as root)")
def test_the_cache_works_in_a_user_namespace_that_does_not_map_root(victim):
    import shutil

    if shutil.which("bwrap") is None and os.environ.get("CI") != "true":
        pytest.skip("bubblewrap is not installed")
    command = ["setpriv", f"--reuid={victim.pw_uid}", f"--regid={victim.pw_gid}", "--init-groups",
               "bwrap", "--unshare-user", "--ro-bind", "/", "/", "--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev",
               "--setenv", "HOME", "/tmp", "--setenv", "TENSORADBOOK_CACHE", "/tmp/kernels", "--unsetenv",
               "NUMBA_CACHE_DIR", sys.executable, "-c", IN_A_NAMESPACE]
    from tests.hub_support import one_class_at_a_time, passable

    with one_class_at_a_time(), passable():  # this Python may live under /root (a pyenv), 0700
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd="/")
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"useful": [True, True, True], "f": [0.0, 2.0, 4.0]}
