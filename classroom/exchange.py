"""nbgrader's exchange on the class server, taken in safely: the collect, and root's file work beside other users.

**The collect** (:func:`collect`, run by ``make grade`` on the class server in place of ``nbgrader collect``).
``nbgrader submit`` leaves a submission in ``<exchange>/<course>/inbound/`` as a folder named
``<student>+<assignment>+<timestamp>+<random>`` holding the notebooks, ``timestamp.txt`` and
``submission_secret.txt``. nbgrader's own collect believes the name: the student id is whatever the folder's name
says (a different owner is only a warning), the latest timestamp in a name wins for good, and the files are copied
with links followed, with the instructor's rights. So one student could submit in another's name (a timestamp in
2099 replaced the other's work), or hand in a link to the instructor's source notebook, or to another student's
submission. Here an entry is taken only when

* its name has nbgrader's four parts, the assignment is one being collected and the student id is on the class
  list (``students.csv``), with a Unix user of that name;
* the folder, and every folder and file in it, is owned by that student's uid (``lstat``), nothing in it is a link
  (a symbolic one, or a file with another hard link), only plain files and folders, read through descriptors opened
  with ``O_NOFOLLOW`` (a link swapped in while it is read is refused, never followed);
* its time parses, is not in the future (beyond :data:`CLOCK_SKEW`) and is what its ``timestamp.txt`` says;
* it is within :data:`MAX_FILE_BYTES`, :data:`MAX_ENTRY_BYTES`, :data:`MAX_FILES` and :data:`MAX_DEPTH`.
* it arrived before the assignment's hard cut-off, the student's extension added (course/deadlines.toml,
  :mod:`classroom.deadlines`). Its arrival is the latest change time (``ctime``) of its folder and files as the
  kernel keeps it, not the time in its name or ``timestamp.txt``, which the student writes: a student can make a
  ``ctime`` later (by touching the entry) but never earlier, so a backdated entry cannot pass the cut-off.

Of each student's entries the latest one taken is copied into ``<course>/submitted/<student>/<assignment>/`` as
nbgrader's collect lays it out (the files, ``timestamp.txt``, ``submission_secret.txt``), replacing what is there
unless it is the same. Each entry refused is printed and returned as a grading-report row ("refused submission"),
and one taken whose files changed after its time (the student owns it and can edit it after submitting, or
backdate its name) as a "suspicious submission" row. The collect runs as the instructor (never root): it writes
only into the instructor's course folder.

**Root beside other users' files** (:func:`open_folder`, :func:`ensure_folder`, :func:`chown_tree`,
:func:`replace_file`): ``make hub`` and ``make grade`` run as root and still set up or hand over folders inside
trees that instructors can change (the course folder, the course's folder in the exchange). There a path is walked
one folder at a time with ``O_NOFOLLOW``: a link is followed only where it lies in a folder that only root can
change (an administrator's ``/srv -> /data/srv``); an owner or mode is changed on a descriptor of the very folder
or file looked at (never on a path, which a link swapped in would redirect); files with another hard link are left
alone; and a file is replaced by a new one renamed over it, never written through.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import secrets
import shutil
import stat
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

#: How far in the future a submission's time may be (the students' servers run on this machine's clock).
CLOCK_SKEW = 300
#: One file of a submission, a whole submission, its files, its depth of folders.
MAX_FILE_BYTES = 50 * 2 ** 20
MAX_ENTRY_BYTES = 100 * 2 ** 20
MAX_FILES = 500
MAX_DEPTH = 8
#: What nbgrader's collect leaves out (CourseDirectory.ignore): skipped, neither read nor refused.
IGNORED = (".ipynb_checkpoints", "__pycache__", "feedback")
#: Seconds an entry's arrival may lie past the cut-off: ``nbgrader submit`` copies its files after taking its time.
ARRIVAL_SLACK = 60
REFUSED = "refused submission"
SUSPICIOUS = "suspicious submission"

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class UnsafePath(OSError):
    """A path that leads through a link someone other than root could have put there (or is not a folder)."""


class Refused(Exception):
    """An entry of the inbound that is not collected; the message says why."""


# --- root beside other users' files ------------------------------------------------------------------------------

def _root_only(folder: os.stat_result, entry: os.stat_result) -> bool:
    """Whether only root could have put ``entry`` in ``folder``: root's folder that no one else writes, or root's
    sticky folder (/tmp) and root's entry, which no one else can rename or remove."""
    if folder.st_uid != 0:
        return False
    if not folder.st_mode & 0o022:
        return True
    return bool(folder.st_mode & stat.S_ISVTX) and entry.st_uid == 0


def open_folder(path: str | os.PathLike, *, create: int | None = None, _depth: int = 0) -> int:
    """A descriptor of the folder ``path`` (absolute), reached one folder at a time without following a link that
    anyone but root could have put there (:class:`UnsafePath` for such a link, or for a path that is not a folder).

    ``create``: the mode of each missing folder, made here (root's when run as root; the umask applies)."""
    if _depth > 40:
        raise UnsafePath(errno.ELOOP, "too many links", str(path))
    parts = [p for p in os.path.abspath(path).split("/") if p]
    fd = os.open("/", _DIR)
    try:
        for i, name in enumerate(parts):
            try:
                child = os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if create is None:
                    raise
                with contextlib.suppress(FileExistsError):  # made meanwhile
                    os.mkdir(name, create, dir_fd=fd)
                child = os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as error:
                if error.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                here = "/" + "/".join(parts[:i + 1])
                entry = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISLNK(entry.st_mode):
                    raise UnsafePath(errno.ENOTDIR, "not a folder", here) from None
                if not _root_only(os.fstat(fd), entry):
                    raise UnsafePath(errno.ELOOP, "a link in a folder that others than root can change", here) from None
                target = os.path.join("/" + "/".join(parts[:i]), os.readlink(name, dir_fd=fd), *parts[i + 1:])
                os.close(fd)
                fd = -1
                return open_folder(os.path.normpath(target), create=create, _depth=_depth + 1)
            os.close(fd)
            fd = child
        result, fd = fd, -1
        return result
    finally:
        if fd >= 0:
            os.close(fd)


def ensure_folder(path: str | os.PathLike, mode: int, uid: int = -1, gid: int = -1) -> None:
    """``path`` made if missing (its missing parents root's, 0755), then given ``uid``:``gid`` and ``mode`` on a
    descriptor of that very folder (:func:`open_folder`): a link in the way is refused, never followed."""
    fd = open_folder(path, create=0o755)
    try:
        os.fchown(fd, uid, gid)
        os.fchmod(fd, mode)  # after the chown, which clears set-id bits; and past the umask
    finally:
        os.close(fd)


def chown_tree(path: str | os.PathLike, uid: int, gid: int, *, only_uid: int | None = None) -> list[str]:
    """Give the folder ``path`` and every folder and plain file below it to ``uid``:``gid`` (only those owned by
    ``only_uid``, if given), each on a descriptor opened without following links (``os.fwalk``, which never
    descends into a link). Links themselves, files with other hard links (which could be any file of the machine)
    and anything but folders and plain files are left as they are; returns their paths."""
    left = []
    top = open_folder(path)
    try:
        if only_uid is None or os.fstat(top).st_uid == only_uid:
            os.fchown(top, uid, gid)
        for folder, dirs, files, folder_fd in os.fwalk(".", dir_fd=top):
            for name in dirs + files:
                try:
                    fd = os.open(name, _FILE, dir_fd=folder_fd)
                except OSError:  # a link (ELOOP), a socket, or gone meanwhile
                    left.append(os.path.join(path, folder, name))
                    continue
                try:
                    st = os.fstat(fd)
                    if not (stat.S_ISDIR(st.st_mode) or (stat.S_ISREG(st.st_mode) and st.st_nlink == 1)):
                        left.append(os.path.join(path, folder, name))
                    elif only_uid is None or st.st_uid == only_uid:
                        os.fchown(fd, uid, gid)
                finally:
                    os.close(fd)
    finally:
        os.close(top)
    return left


def read_file(folder_fd: int, name: str) -> bytes | None:
    """The contents of the plain file ``name`` in a folder, or None where it is missing or not a plain file."""
    try:
        fd = os.open(name, _FILE, dir_fd=folder_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    finally:
        os.close(fd)


def replace_file(folder_fd: int, name: str, data: bytes, mode: int, uid: int = -1, gid: int = -1) -> None:
    """A new file ``name`` in the folder, written under a fresh name (``O_EXCL``, never through a link) and renamed
    over what was there: whatever ``name`` was (a link to a file of root's), nothing but the name changes."""
    temporary = f".{name}.{secrets.token_hex(8)}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                 dir_fd=folder_fd)
    try:
        with os.fdopen(os.dup(fd), "wb") as f:
            f.write(data)
        os.fchown(fd, uid, gid)
        os.fchmod(fd, mode)
    except BaseException:
        os.unlink(temporary, dir_fd=folder_fd)
        raise
    finally:
        os.close(fd)
    os.replace(temporary, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)


def copy_tree(source: Path, folder_fd: int, name: str, uid: int = -1, gid: int = -1) -> bool:
    """The folder ``source`` (root's) copied as ``name`` into a folder others can change, given ``uid``:``gid``:
    each folder made and opened on the descriptor of the one above, each file written by :func:`replace_file`.
    Nothing is done (False) where ``name`` is there already, whatever it is."""
    try:
        os.mkdir(name, 0o700, dir_fd=folder_fd)
    except FileExistsError:
        return False
    fd = os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=folder_fd)
    try:
        os.fchown(fd, uid, gid)
        for child in sorted(source.iterdir()):
            if child.is_symlink():
                continue
            if child.is_dir():
                copy_tree(child, fd, child.name, uid, gid)
            elif child.is_file():
                replace_file(fd, child.name, child.read_bytes(), 0o644, uid, gid)
        os.fchmod(fd, 0o755)
    finally:
        os.close(fd)
    return True


# --- the collect ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Entry:
    """One folder of the inbound, as its name reads."""

    name: str
    student: str
    assignment: str
    stamp: str
    when: datetime  # UTC, naive (as nbgrader's parse_utc gives it)


def parse_time(text: str) -> datetime:
    """A time as nbgrader writes it (``2024-05-01 12:34:56.123456 UTC``), in UTC without a zone; ValueError."""
    from nbgrader.utils import parse_utc

    try:
        when = parse_utc(text.strip())
    except (ValueError, OverflowError, TypeError, AttributeError) as error:
        raise ValueError(f"not a time: {text!r}") from error
    if not isinstance(when, datetime):
        raise ValueError(f"not a time: {text!r}")
    return when


def parse_name(name: str) -> Entry:
    """nbgrader's ``<student>+<assignment>+<timestamp>+<random>``; :class:`Refused` for another name."""
    parts = name.split("+")
    if len(parts) != 4 or not all(parts):
        raise Refused("not a submission's name (<student>+<assignment>+<time>+<random>)")
    student, assignment, stamp, _ = parts
    try:
        when = parse_time(stamp)
    except ValueError:
        raise Refused(f"its time {stamp!r} is not a time") from None
    return Entry(name, student, assignment, stamp, when)


def _row(assignment: str, student: str, kind: str, detail: str) -> dict:
    return {"assignment": assignment, "student": student, "cell": "", "kind": kind, "detail": detail}


def _owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _check_folder(st: os.stat_result, uid: int, what: str) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise Refused(f"{what} is a link")
    if not stat.S_ISDIR(st.st_mode):
        raise Refused(f"{what} is not a folder")
    if st.st_uid != uid:
        raise Refused(f"{what} is owned by {_owner(st.st_uid)}, not by the student it names: handed in in "
                      "another's name")


class _EntryReader:
    """The walk of one entry: its files (relative path -> contents), the latest change time among them and their
    total size, each folder and file checked to be the student's own (see the module's text)."""

    def __init__(self, uid: int):
        self.uid, self.files, self.changed, self.total = uid, {}, 0.0, 0

    def walk(self, fd: int, prefix: str, depth: int) -> None:
        here = os.fstat(fd)
        _check_folder(here, self.uid, f"folder {prefix or '.'}")
        self.changed = max(self.changed, here.st_ctime)
        for name in sorted(os.listdir(fd)):
            if name in IGNORED or name.endswith(".pyc"):
                continue
            rel = f"{prefix}{name}"
            seen = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(seen.st_mode):
                raise Refused(f"{rel} is a link")
            if stat.S_ISDIR(seen.st_mode):
                self._folder(fd, name, seen, rel, depth)
            elif stat.S_ISREG(seen.st_mode):
                self._file(fd, name, seen, rel)
            else:
                raise Refused(f"{rel} is neither a file nor a folder")

    def _folder(self, fd: int, name: str, seen: os.stat_result, rel: str, depth: int) -> None:
        if depth >= MAX_DEPTH:
            raise Refused(f"{rel}: folders deeper than {MAX_DEPTH}")
        try:
            child = os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=fd)
        except OSError:
            raise Refused(f"{rel} changed while it was read") from None
        try:
            if (os.fstat(child).st_ino, os.fstat(child).st_dev) != (seen.st_ino, seen.st_dev):
                raise Refused(f"{rel} changed while it was read")
            self.walk(child, f"{rel}/", depth + 1)
        finally:
            os.close(child)

    def _file(self, fd: int, name: str, seen: os.stat_result, rel: str) -> None:
        try:
            child = os.open(name, _FILE, dir_fd=fd)
        except OSError:
            raise Refused(f"{rel} changed while it was read (a link swapped in?)") from None
        try:
            st = os.fstat(child)
            _check_file(st, seen, rel, self.uid)
            if len(self.files) >= MAX_FILES:
                raise Refused(f"more than {MAX_FILES} files")
            with os.fdopen(os.dup(child), "rb") as f:
                data = f.read(MAX_FILE_BYTES + 1)
            self.total += len(data)
            if len(data) > MAX_FILE_BYTES or self.total > MAX_ENTRY_BYTES:
                raise Refused(f"larger than {MAX_ENTRY_BYTES // 2 ** 20} MiB")
            self.files[rel] = data
            self.changed = max(self.changed, st.st_ctime)
        finally:
            os.close(child)


def _check_file(st: os.stat_result, seen: os.stat_result, rel: str, uid: int) -> None:
    """An open file of an entry: the one listed, plain, the student's, with no other hard link, not too large."""
    if (st.st_ino, st.st_dev) != (seen.st_ino, seen.st_dev) or not stat.S_ISREG(st.st_mode):
        raise Refused(f"{rel} changed while it was read")
    if st.st_uid != uid:
        raise Refused(f"{rel} is owned by {_owner(st.st_uid)}, not by the student it names")
    if st.st_nlink != 1:
        raise Refused(f"{rel} has {st.st_nlink} hard links (a link to another file)")
    if st.st_size > MAX_FILE_BYTES:
        raise Refused(f"{rel} is larger than {MAX_FILE_BYTES // 2 ** 20} MiB")


def read_entry(inbound_fd: int, entry: Entry, uid: int) -> tuple[dict[str, bytes], float]:
    """The files of an entry (relative path -> contents) and the latest change time among them, read only when
    all of it is the student's own (see the module's text); :class:`Refused` otherwise."""
    try:
        top = os.open(entry.name, _DIR | os.O_NOFOLLOW, dir_fd=inbound_fd)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            raise Refused("it is not a folder (a link?)") from None
        raise Refused(f"it cannot be read ({error.strerror})") from None
    reader = _EntryReader(uid)
    try:
        reader.walk(top, "", 0)
    finally:
        os.close(top)
    stamp = reader.files.get("timestamp.txt")
    if stamp is None:
        raise Refused("it has no timestamp.txt (not as nbgrader submit leaves it)")
    try:
        written = parse_time(stamp.decode("utf-8", errors="replace"))
    except ValueError:
        raise Refused("its timestamp.txt holds no time") from None
    if written != entry.when:
        raise Refused(f"its timestamp.txt says {stamp.decode(errors='replace').strip()!r}, its name {entry.stamp!r}")
    return reader.files, reader.changed


def _existing(folder: Path) -> dict[str, bytes] | None:
    if not folder.is_dir():
        return None
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _place(course: Path, student: str, assignment: str, files: dict[str, bytes], groupshared: bool) -> bool:
    """The files as ``<course>/submitted/<student>/<assignment>/`` (replacing what is there); False when that
    already holds exactly them."""
    parent = course / "submitted" / student
    dest = parent / assignment
    if _existing(dest) == files:
        return False
    parent.mkdir(parents=True, exist_ok=True)
    fresh = parent / f".{assignment}.collecting-{secrets.token_hex(6)}"
    dir_mode, file_mode = (0o2770, 0o660) if groupshared else (0o755, 0o644)
    fresh.mkdir(mode=0o700)
    for rel, data in files.items():
        path = fresh / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(file_mode)
    for folder in sorted((p for p in [fresh, *fresh.rglob("*")] if p.is_dir()), key=lambda p: -len(p.parts)):
        folder.chmod(dir_mode)
    old = None
    if dest.exists() or dest.is_symlink():
        old = parent / f".{assignment}.replaced-{secrets.token_hex(6)}"
        os.rename(dest, old)
    os.rename(fresh, dest)
    if old is not None:
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old)
        else:
            old.unlink()
    return True


def _listed_entry(inbound_fd: int, name: str, roster: set[str], uids: dict[str, int], now: datetime) -> Entry:
    """The entry ``name`` of the inbound folder when it may be a submission: a submission's name, of a student on
    the class list and of this machine (``uids`` learns their uid), a folder of theirs, its time not in the future;
    :class:`Refused` otherwise."""
    entry = parse_name(name)
    if entry.student not in roster:
        raise Refused(f"{entry.student!r} is not on the class list")
    try:
        uids.setdefault(entry.student, pwd.getpwnam(entry.student).pw_uid)
    except KeyError:
        raise Refused(f"{entry.student!r} is no user of this machine") from None
    _check_folder(os.stat(name, dir_fd=inbound_fd, follow_symlinks=False), uids[entry.student], "the folder")
    if (entry.when - now).total_seconds() > CLOCK_SKEW:
        raise Refused(f"its time {entry.stamp!r} is in the future")
    return entry


def _take(course: Path, entry: Entry, files: dict[str, bytes], changed: float, groupshared: bool) -> list[dict]:
    """An entry's files placed in the course folder; the report row when they changed after the entry's time."""
    copied = _place(course, entry.student, entry.assignment, files, groupshared)
    print(f"collect: {entry.student} / {entry.assignment} ({entry.stamp}): "
          + ("collected" if copied else "already collected"), flush=True)
    late = datetime.fromtimestamp(changed, UTC).replace(tzinfo=None)
    if (late - entry.when).total_seconds() <= CLOCK_SKEW:
        return []
    detail = (f"{entry.name}: its files changed at {late:%Y-%m-%d %H:%M:%S} UTC, after its time {entry.stamp}: "
              "edited after it was submitted, or its name backdated (graded as it is now, with its name's time)")
    print(f"collect: suspicious: {detail}", flush=True)
    return [_row(entry.assignment, entry.student, SUSPICIOUS, detail)]


def _check_arrival(entry: Entry, changed: float, cutoff: datetime | None) -> None:
    """:class:`Refused` for an entry that arrived (or says it was made) after its ``cutoff``."""
    if cutoff is None:
        return
    arrived = datetime.fromtimestamp(changed, UTC).replace(tzinfo=None)
    if (max(arrived, entry.when) - cutoff).total_seconds() > ARRIVAL_SLACK:
        raise Refused(f"it arrived at {arrived:%Y-%m-%d %H:%M:%S} UTC, after the hard cut-off of "
                      f"{cutoff:%Y-%m-%d %H:%M:%S} UTC (extension included): submissions are no longer accepted")


def _collect_latest(course: Path, inbound_fd: int, entries: list[Entry], uid: int, groupshared: bool,
                    refuse, cutoff: datetime | None) -> list[dict]:
    """The latest of one student's entries for one assignment that can be taken, placed in the course folder (each
    later one refused on the way, ``refuse(assignment, student, name, why)``, as is one after ``cutoff``); its
    report rows."""
    for entry in sorted(entries, key=lambda e: e.when, reverse=True):
        try:
            files, changed = read_entry(inbound_fd, entry, uid)
            _check_arrival(entry, changed, cutoff)
        except Refused as why:
            refuse(entry.assignment, entry.student, entry.name, str(why))
            continue
        except OSError as error:  # a folder its student made unreadable, or gone meanwhile
            refuse(entry.assignment, entry.student, entry.name, f"it cannot be read ({error.strerror or error})")
            continue
        return _take(course, entry, files, changed, groupshared)
    return []


def collect(settings, assignments: list[str], *, now: datetime | None = None,
            cutoffs: dict[tuple[str, str], datetime] | None = None) -> list[dict]:
    """Collect the latest submission taken of every student on the class list for each of ``assignments`` from
    the exchange's inbound into the course folder (see the module's text); returns the report rows of the entries
    refused and of those taken that look edited after their time. ``cutoffs``: (assignment, student) -> the
    student's hard cut-off, (assignment, "") everyone else's (:func:`classroom.deadlines.cutoffs`), in UTC without
    a zone. Runs as the instructor, never as root."""
    if os.geteuid() == 0:
        raise RuntimeError("the collect runs as the instructor, not as root (it writes into the course folder); "
                           "classroom.course_hub.hub_grade starts it so")
    now = now or datetime.now(UTC).replace(tzinfo=None)
    roster = {s.username for s in settings.students()}
    wanted = set(assignments)
    inbound = settings.exchange / settings.course_id / "inbound"
    rows: list[dict] = []

    def refuse(assignment: str, student: str, name: str, why: str) -> None:
        print(f"collect: refused {name!r}: {why}", flush=True)
        rows.append(_row(assignment, student, REFUSED, f"{name}: {why}"))

    try:
        inbound_fd = open_folder(inbound)
    except FileNotFoundError:
        print(f"collect: no inbound folder {inbound}: nothing submitted")
        return rows
    try:
        uids: dict[str, int] = {}
        candidates: dict[tuple[str, str], list[Entry]] = defaultdict(list)
        for name in sorted(os.listdir(inbound_fd)):
            parts = name.split("+")
            if len(parts) > 1 and parts[1] not in wanted:
                continue  # another assignment's, or not one of this course's
            try:
                entry = _listed_entry(inbound_fd, name, roster, uids, now)
            except Refused as why:
                refuse(parts[1] if len(parts) > 1 else "", parts[0], name, str(why))
                continue
            candidates[(entry.student, entry.assignment)].append(entry)
        groupshared = len(settings.instructors) > 1
        cutoffs = cutoffs or {}
        for (student, assignment), entries in sorted(candidates.items()):
            cutoff = cutoffs.get((assignment, student), cutoffs.get((assignment, "")))
            rows += _collect_latest(settings.course, inbound_fd, entries, uids[student], groupshared, refuse, cutoff)
    finally:
        os.close(inbound_fd)
    return rows
