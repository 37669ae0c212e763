"""The kernel cache (tensoradbook.codegen.cache): yours alone, readable when shared, healed when corrupt.

No module or Numba index another user could have written is loaded: a cache directory another user owns, or that
others can write, is refused with a warning, and a planted module file is removed. A read-only shared cache is read
(Numba's machine code with it) and never written. A truncated or garbage ``.nbi``, ``.nbc``, ``.py`` or ``.pyc`` is
removed, with one warning naming it, and rebuilt.

Root ignores permission bits, so what a user other than root sees runs in a subprocess that drops to a system user
(made with ``useradd`` where missing); those tests are skipped where the tests do not run as root.
"""

import hashlib
import json
import os
import pickle
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import tensoradbook as tab
from tensoradbook.codegen import cache
from tensoradbook.codegen.cache import KernelCacheWarning

REPO = Path(__file__).resolve().parents[1]
SHAPES = {"f": (2, 2), "x": (2, 3), "y": (3, 2)}
#: functions of ``x`` and ``y``, each its own module; the first compiles to one Numba kernel
TEXTS = ["f[i; j] = sum{k}_0^2 (x[i; k] * y[k; j] ** 2)", "f[i; j] = sum{k}_0^2 (x[i; k] * y[k; j] ** 3)",
         "f[i; j] = sum{k}_0^2 (x[i; k] ** 2 * y[k; j])"]
#: a module that, imported, leaves a mark and computes nonsense
PLANTED = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\n\ndef forward(*arrays):\n    return 0\n"


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    """No module loaded, warning given or process directory made by an earlier test; no shared cache or owner of one
    named."""
    monkeypatch.setattr(cache, "_MODULES", {})
    monkeypatch.setattr(cache, "_WARNED", set())
    monkeypatch.setattr(cache, "_process_directory", None)
    monkeypatch.delenv("TENSORADBOOK_SHARED_CACHE", raising=False)
    monkeypatch.delenv("TENSORADBOOK_SHARED_CACHE_OWNER", raising=False)


@pytest.fixture
def public_tmp(monkeypatch):
    """A temporary directory as ``/tmp`` is (every user may add to it, sticky), this test's ``$TMPDIR``. Not
    ``tmp_path``: pytest's are out of other users' reach, and the cache rightly trusts what no one else can reach."""
    directory = Path(tempfile.mkdtemp(prefix="tab-cache-test-", dir=os.path.realpath(tempfile.gettempdir())))
    directory.chmod(0o1777)
    monkeypatch.setenv("TMPDIR", str(directory))
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    yield directory
    shutil.rmtree(directory)


def system_user(name: str) -> pwd.struct_passwd:
    """The system user ``name``, made if missing (root only)."""
    if os.getuid() != 0:
        pytest.skip("needs root: to make another user and act as one")
    try:
        return pwd.getpwnam(name)
    except KeyError:
        if shutil.which("useradd") is None:
            pytest.skip(f"needs useradd, to make the user {name}")
    # another test worker may make it at the same time: whichever useradd wins, the user is there after
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                   capture_output=True, check=False)
    return pwd.getpwnam(name)


@pytest.fixture
def intruder():
    return system_user("tab-cache-intruder")


@pytest.fixture
def victim():
    return system_user("tab-cache-victim")


def module_name(text: str, target: str) -> str:
    source = tab.parse(text, SHAPES).kernel_source(target)
    return f"k_{hashlib.sha256(source.encode()).hexdigest()[:24]}"


def arguments(fn) -> dict:
    return {name: np.linspace(0.5, 1.5, int(np.prod(fn.shapes[name]))).reshape(fn.shapes[name])
            for name in fn.arguments}


def plant(directory: Path, name: str, marker: Path, owner: int) -> Path:
    """A module of the expected name in ``directory``, by ``owner``, that marks ``marker`` when imported."""
    planted = directory / f"{name}.py"
    planted.write_text(PLANTED.format(marker=str(marker)))
    os.chown(planted, owner, owner)
    return planted


def compile_warned(target: str = "numpy", text: str = TEXTS[0]):
    """``text`` compiled for ``target``, its values checked, and the cache's warnings."""
    fn = tab.parse(text, SHAPES)
    with pytest.warns(KernelCacheWarning) as caught:
        compiled = fn.compile(target)
    args = arguments(fn)
    np.testing.assert_allclose(compiled(args), fn.evaluate(args))
    return compiled, [str(w.message) for w in caught if issubclass(w.category, KernelCacheWarning)]


@pytest.mark.parametrize("owner, mode, why", [
    ("intruder", 0o755, "belongs to tab-cache-intruder"),
    ("us", 0o777, "can be written by its group and other users"),
    ("us", 0o770, "can be written by its group"),
])
def test_a_planted_temporary_cache_is_refused(tmp_path, public_tmp, monkeypatch, intruder, owner, mode, why):
    """The attack: another user makes ``$TMPDIR/tensoradbook-kernels-<uid>`` first, with the module of a function we
    will compile in it. Where the home cache cannot be made, the kernels go to a new directory of this process."""
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("TENSORADBOOK_CACHE", str(tmp_path / "file" / "kernels"))  # cannot be made
    planted = public_tmp / f"tensoradbook-kernels-{os.getuid()}"
    planted.mkdir()
    marker = public_tmp / "marker"
    plant(planted, module_name(TEXTS[0], "numpy"), marker, intruder.pw_uid)
    if owner == "intruder":
        os.chown(planted, intruder.pw_uid, intruder.pw_gid)
    planted.chmod(mode)
    compiled, warned = compile_warned()
    assert not marker.exists()
    assert warned == [f"tensoradbook: the kernel cache {planted} is not used: {planted} {why}"]
    directory = Path(compiled.path).parent
    assert directory.parent == public_tmp and directory.name.startswith("tensoradbook-kernels-")
    assert directory != planted and directory.stat().st_mode & 0o777 == 0o700


def test_a_link_in_place_of_the_temporary_cache_is_refused(tmp_path, public_tmp, monkeypatch, intruder):
    """Whoever planted the link can point it at their own directory at any time, even when it points at ours."""
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("TENSORADBOOK_CACHE", str(tmp_path / "file" / "kernels"))  # cannot be made
    elsewhere = public_tmp / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    marker = public_tmp / "marker"
    plant(elsewhere, module_name(TEXTS[0], "numpy"), marker, os.getuid())
    planted = public_tmp / f"tensoradbook-kernels-{os.getuid()}"
    planted.symlink_to(elsewhere)
    os.lchown(planted, intruder.pw_uid, intruder.pw_gid)
    compiled, warned = compile_warned()
    assert not marker.exists()
    assert warned == [f"tensoradbook: the kernel cache {planted} is not used: {planted} is a symbolic link"]
    assert Path(compiled.path).parent.parent == public_tmp


@pytest.mark.parametrize("owner, mode, why", [
    ("intruder", 0o644, "belongs to tab-cache-intruder"),
    ("us", 0o666, "can be written by its group and other users"),
])
def test_a_planted_module_file_is_removed_not_imported(public_tmp, monkeypatch, intruder, owner, mode, why):
    """In a cache directory of ours, a module file of another user's, or one others can write, is not imported."""
    directory = public_tmp / "kernels"
    directory.mkdir(mode=0o755)
    monkeypatch.setenv("TENSORADBOOK_CACHE", str(directory))
    marker = public_tmp / "marker"
    planted = plant(directory, module_name(TEXTS[0], "numpy"), marker, intruder.pw_uid if owner == "intruder" else 0)
    planted.chmod(mode)
    compiled, warned = compile_warned()
    assert not marker.exists()
    assert warned == [f"tensoradbook: {planted} {why}: removed and rebuilt"]
    assert compiled.path == str(planted) and planted.read_text() == compiled.source
    assert planted.stat().st_uid == os.getuid() and planted.stat().st_mode & 0o777 == 0o644


def test_a_named_shared_cache_is_read_not_written(tmp_path, public_tmp, monkeypatch, intruder):
    """``$TENSORADBOOK_SHARED_CACHE`` names a cache whose owner (here another user, as a teacher) is trusted, as
    ``$TENSORADBOOK_SHARED_CACHE_OWNER`` names that user: a module there is copied with Numba's files for it into the
    private cache; the shared one is not changed."""
    shared = public_tmp / "shared"
    monkeypatch.setenv("TENSORADBOOK_CACHE", str(shared))
    first = tab.parse(TEXTS[0], SHAPES).compile("numpy")
    index = shared / "__pycache__" / f"{Path(first.path).stem}.forward-1.{cache._NUMBA_TAG}.nbi"
    index.parent.mkdir()
    index.write_bytes(pickle.dumps("0.68") + pickle.dumps(("stamp", {})))  # as Numba writes an index
    for path in [shared, *shared.rglob("*")]:
        os.chown(path, intruder.pw_uid, intruder.pw_gid)
    before = sorted((str(p), p.stat().st_mtime_ns) for p in shared.rglob("*"))
    monkeypatch.setattr(cache, "_MODULES", {})
    monkeypatch.setenv("TENSORADBOOK_SHARED_CACHE", str(shared))
    monkeypatch.setenv("TENSORADBOOK_SHARED_CACHE_OWNER", intruder.pw_name)
    monkeypatch.setenv("TENSORADBOOK_CACHE", str(tmp_path / "mine"))
    fn = tab.parse(TEXTS[0], SHAPES)
    copied, new = fn.compile("numpy"), tab.parse(TEXTS[1], SHAPES).compile("numpy")
    assert Path(copied.path).parent == Path(new.path).parent == tmp_path / "mine"
    assert (tmp_path / "mine" / "__pycache__" / index.name).read_bytes() == index.read_bytes()
    assert sorted((str(p), p.stat().st_mtime_ns) for p in shared.rglob("*")) == before
    args = arguments(fn)
    np.testing.assert_allclose(copied(args), fn.evaluate(args))


#: Compiles TEXTS[i] for each i given, with the cache's warnings recorded. Where a user is given, it first compiles
#: and loads a kernel as root (what Python imports lazily on the way comes from its library, which may be out of
#: the user's reach, under /root), then becomes that user, with no home and the environment given.
PROBE = """
import json, os, sys, warnings
import numpy as np
import tensoradbook as tab
from tensoradbook.codegen import cache

job = json.loads(sys.argv[1])
shapes, texts = job["shapes"], job["texts"]

def run(numbers):
    out = []
    for number in numbers:
        fn = tab.parse(texts[number], shapes)
        compiled = fn.compile(job["target"])
        args = {name: np.linspace(0.5, 1.5, int(np.prod(fn.shapes[name]))).reshape(fn.shapes[name])
                for name in fn.arguments}
        kernels = [k for k in vars(compiled.module).values() if hasattr(k, "stats")]
        out.append({"path": compiled.path, "same": bool(np.allclose(compiled(args), fn.evaluate(args))),
                    "hits": sum(len(k.stats.cache_hits) for k in kernels),
                    "misses": sum(len(k.stats.cache_misses) for k in kernels)})
    return out

if job["user"]:
    run([0])
    cache._MODULES.clear()
    run([0])
    cache._MODULES.clear()
    os.environ.pop("TENSORADBOOK_CACHE")
    os.environ.pop("XDG_CACHE_HOME", None)
    os.environ.update(HOME="/nonexistent", **job["env"])  # a system user's: no home to write
    os.setgroups([])
    os.setgid(job["user"][1])
    os.setuid(job["user"][0])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    results = run(job["functions"])
print(json.dumps({"results": results, "warnings": [str(w.message) for w in caught
                                                   if issubclass(w.category, cache.KernelCacheWarning)]}))
"""


def probe(functions: list[int], target: str, cache_directory: Path, user=None, env: dict | None = None) -> dict:
    """PROBE in a new process with ``$TENSORADBOOK_CACHE`` at ``cache_directory`` (for ``user``, ``env`` instead),
    bytecode written."""
    job = {"shapes": SHAPES, "texts": TEXTS, "functions": functions, "target": target, "env": env or {},
           "user": user and [user.pw_uid, user.pw_gid]}
    process_env = {**os.environ, "TENSORADBOOK_CACHE": str(cache_directory)}
    process_env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(job)], env=process_env, capture_output=True,
                          text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_an_unprivileged_user_does_not_import_a_module_planted_in_its_temporary_cache(tmp_path, public_tmp, intruder,
                                                                                       victim):
    """The attack as it happens: the victim is not root, its home is not writable, and another user made
    ``$TMPDIR/tensoradbook-kernels-<victim's uid>`` first, the module of the victim's function in it."""
    planted = public_tmp / f"tensoradbook-kernels-{victim.pw_uid}"
    planted.mkdir(mode=0o755)
    marker = public_tmp / "marker"
    plant(planted, module_name(TEXTS[1], "numpy"), marker, intruder.pw_uid)
    os.chown(planted, intruder.pw_uid, intruder.pw_gid)
    run = probe([1], "numpy", tmp_path / "warm-up", victim)
    assert not marker.exists()
    assert run["results"][0]["same"]
    directory = Path(run["results"][0]["path"]).parent
    assert directory.parent == public_tmp and directory != planted  # the process's own, removed when it ended
    assert not directory.exists()
    assert run["warnings"] == [f"tensoradbook: the kernel cache {planted} is not used: {planted} belongs to "
                               "tab-cache-intruder"]


def test_a_read_only_shared_cache_is_read_and_left_as_it_is(tmp_path, public_tmp, victim):
    """A warm cache others cannot write (root's, read-only to a user): its kernels load from Numba's cache without
    compiling, a new one lands in the user's private cache, and one whose Numba index is corrupt there is compiled
    in the private cache, with one warning; nothing in the shared cache changes."""
    shared = public_tmp / "shared"
    warm = probe([0, 2], "numba", shared)
    assert warm["warnings"] == [] and all(run["misses"] > 0 for run in warm["results"])
    broken = next((shared / "__pycache__").glob(f"{Path(warm['results'][1]['path']).stem}.*.nbi"))
    broken.write_bytes(broken.read_bytes()[:100])
    for path in [shared, *shared.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    before = sorted((str(p), p.stat().st_mtime_ns) for p in shared.rglob("*"))
    run = probe([0, 1, 2], "numba", tmp_path / "warm-up", victim, {"TENSORADBOOK_CACHE": str(shared)})
    assert sorted((str(p), p.stat().st_mtime_ns) for p in shared.rglob("*")) == before
    private = public_tmp / f"tensoradbook-kernels-{victim.pw_uid}"
    assert private.stat().st_uid == victim.pw_uid and private.stat().st_mode & 0o777 == 0o700
    copied, new, rebuilt = run["results"]
    assert all(result["same"] and Path(result["path"]).parent == private for result in run["results"])
    assert copied["hits"] > 0 and copied["misses"] == 0  # Numba's machine code from the shared cache
    assert new["misses"] > 0 and rebuilt["misses"] > 0
    assert len(run["warnings"]) == 1 and run["warnings"][0].startswith(f"tensoradbook: {broken} is corrupt")
    assert run["warnings"][0].endswith(f"compiled in {private} instead")


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory) -> Path:
    """A cache holding TEXTS[0]'s module, its bytecode and its Numba kernel."""
    directory = tmp_path_factory.mktemp("warm")
    assert probe([0], "numba", directory)["results"][0]["misses"] > 0
    return directory


def truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def garbage(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 4)


@pytest.mark.parametrize("pattern, spoil", [
    ("__pycache__/*.nbi", truncated), ("__pycache__/*.nbc", garbage), ("*.py", truncated),
    ("__pycache__/*.pyc", truncated),
], ids=["truncated index", "garbage data", "truncated module", "truncated bytecode"])
def test_a_corrupt_cache_file_is_removed_and_rebuilt_with_one_warning(tmp_path, warm_cache, pattern, spoil):
    directory = tmp_path / "kernels"
    shutil.copytree(warm_cache, directory)
    (spoiled,) = directory.glob(pattern)
    spoil(spoiled)
    healed = probe([0], "numba", directory)
    assert healed["results"][0]["same"]
    why = "does not hold its source (truncated or changed)" if spoiled.suffix == ".py" else "is corrupt ("
    (warned,) = healed["warnings"]
    assert warned.startswith(f"tensoradbook: {spoiled} {why}") and warned.endswith(": removed and rebuilt")
    again = probe([0], "numba", directory)  # the files rebuilt are sound: loaded, nothing compiled
    assert again["warnings"] == [] and again["results"][0]["same"]
    assert again["results"][0]["hits"] > 0 and again["results"][0]["misses"] == 0
