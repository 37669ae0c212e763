"""``make lab`` opens a working copy of the chapters (``make work``: notebooks/ copied into the git-ignored work/),
so that running a chapter never modifies the committed notebook, whose outputs nbval and the site compare; a
later start adds new chapters and never overwrites the reader's edits."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CHAPTERS = sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb"))

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def make(*args: str) -> str:
    done = subprocess.run(["make", "-s", *args], cwd=REPO, capture_output=True, text=True, timeout=300, check=True)
    return done.stdout


def test_work_copies_the_chapters_once_and_keeps_edits(tmp_path):
    work = tmp_path / "work"
    committed = {name: (REPO / "notebooks" / name).read_bytes() for name in CHAPTERS}
    make("work", f"WORK={work}")
    assert sorted(p.name for p in work.glob("*.ipynb")) == CHAPTERS
    edited, removed = work / CHAPTERS[0], work / CHAPTERS[-1]
    edited.write_text("the reader's own work")
    removed.unlink()
    out = make("work", f"WORK={work}")
    assert edited.read_text() == "the reader's own work", "make work overwrote an edited chapter"
    assert removed.read_bytes() == committed[CHAPTERS[-1]], "a chapter deleted from the copy is not copied again"
    assert out.strip() == f"copied notebooks/{CHAPTERS[-1]} to {work}/"
    assert all((REPO / "notebooks" / n).read_bytes() == b for n, b in committed.items())


def test_lab_opens_the_working_copy():
    # -n: the commands make lab would run, without installing or starting anything
    plan = make("-n", "lab", "WORK=work")
    assert "--LabApp.default_url=/lab/tree/work/00_start_here.ipynb" in plan
    assert f'PYTHONPATH="{REPO}/notebooks' in plan  # the chapters import notebooks/bookdata.py
    assert "/work/" in (REPO / ".gitignore").read_text().split()
