"""Grading a class on every core with a progress line (classroom/autograde.py): the line's counts, bar and time
left, how the submissions are shared among the runs, and how many runs there are. The runs themselves grade in
tests/test_course.py's full cycle (three students on the CI machine's cores)."""

from __future__ import annotations

import io

import pytest

from classroom import autograde


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_progress_line_counts_and_estimates_from_the_pace_so_far():
    clock, out = Clock(), io.StringIO()
    progress = autograde.Progress("04a", 10, stream=out, clock=clock)
    progress.update(0)
    clock.now = 20
    progress.update(0)  # nothing new and within the heartbeat: no line
    clock.now = 40
    progress.update(2)  # 20 s a submission so far: 8 left, 160 s
    clock.now = 100
    progress.update(10)
    lines = out.getvalue().splitlines()
    assert lines == [f"04a: [{'.' * 24}] 0/10 graded, timing the first",
                     f"04a: [{'#' * 4}{'.' * 20}] 2/10 graded, about 2 min 40 s left",
                     f"04a: [{'#' * 24}] 10/10 graded, done"]


def test_a_long_submission_still_shows_a_line_every_heartbeat():
    clock, out = Clock(), io.StringIO()
    progress = autograde.Progress("05", 3, stream=out, clock=clock)
    progress.update(1)
    clock.now = autograde.HEARTBEAT_S + 1
    progress.update(1)
    assert out.getvalue().count("1/3 graded") == 2


@pytest.mark.parametrize(("setting", "expected"), [("3", 3), ("1", 1), ("0", 1)])
def test_the_runs_at_once_are_the_setting_or_the_cpus(monkeypatch, setting, expected):
    monkeypatch.setenv("GRADING_WORKERS", setting)
    assert autograde.grading_workers() == expected
    monkeypatch.delenv("GRADING_WORKERS")
    assert autograde.grading_workers() >= 1
