"""The class dashboard (classroom/dashboard.py) on a gradebook built with nbgrader's API: its numbers, its empty
states, that it escapes what students wrote and names no address, and in chromium that its plots show and nothing
leaves the machine."""

from __future__ import annotations

import base64
import csv
import hashlib
import os
import re
import sys
from datetime import datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from classroom import dashboard

# nbgrader's add_submission builds a submission's objects before it adds them to its session, and SQLAlchemy says so
pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")
REPO = Path(__file__).resolve().parents[1]
DUE = datetime(2026, 12, 1, 12, 0)
#: A student whose id and name are markup, and a report row that is a script.
HOSTILE_ID = 'eve"><img src=x onerror=alert(1)>'
HOSTILE_DETAIL = '<script>alert("grades")</script> redefines check_bezout'
#: Exercises per assignment as (test cell, points); 03_nobody has no submission at all.
ASSIGNMENTS = {"01_intro": [("ex1_test", 1), ("ex2_test", 2), ("ex10_test", 3)], "02_next": [("ex1_test", 1)],
               "03_nobody": [("ex1_test", 2)]}
#: assignment -> student -> (submitted at, scores per cell, late penalty); 01_intro is due at DUE, the others not.
SUBMISSIONS = {
    "01_intro": {
        "ada": (DUE - timedelta(days=1), {"ex1_test": 1, "ex2_test": 2, "ex10_test": 3}, 0),
        "bob": (DUE + timedelta(hours=2), {"ex1_test": 1, "ex2_test": 0, "ex10_test": 3}, 1),
        # after the due date, within his extension: not late
        "cy": (DUE + timedelta(hours=5), {"ex1_test": 1, "ex2_test": 0, "ex10_test": 2}, 0),
    },
    "02_next": {"ada": (DUE, {"ex1_test": 1}, 0), HOSTILE_ID: (DUE, {"ex1_test": 0}, 0)},
}


@pytest.fixture(autouse=True)
def tools_on_path(monkeypatch):
    """A new gradebook runs alembic, from this interpreter's bin folder (as classroom.nbgrader_cli has it)."""
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))


def make_gradebook(course: Path, assignments: dict, submissions: dict, students: list[str]) -> Path:
    course.mkdir(parents=True, exist_ok=True)
    path = course / "gradebook.db"
    with Gradebook(f"sqlite:///{path}") as gradebook:
        for student in students:
            gradebook.add_student(student, first_name=f"<b>{student}</b>")
        for name, cells in assignments.items():
            gradebook.add_assignment(name, duedate=DUE if name == "01_intro" else None)
            gradebook.add_notebook(name, name)
            for cell, points in cells:
                gradebook.add_grade_cell(cell, name, name, max_score=points, cell_type="code")
        for name, by_student in submissions.items():
            for student, (when, scores, penalty) in by_student.items():
                submitted = gradebook.add_submission(name, student, timestamp=when)
                notebook = submitted.notebooks[0]
                notebook.late_submission_penalty = penalty
                for grade in notebook.grades:
                    grade.auto_score = scores[grade.name]
                    grade.needs_manual_grade = False
        if "cy" in submissions.get("01_intro", {}):
            gradebook.grant_extension("01_intro", "cy", hours=6)
        gradebook.db.commit()
    return path


def write_report(course: Path, rows: list[tuple]) -> None:
    with open(course / "grading_report.csv", "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["assignment", "student", "cell", "kind", "detail"])
        writer.writerows(rows)


@pytest.fixture
def course(tmp_path):
    course = tmp_path / "course"
    make_gradebook(course, ASSIGNMENTS, SUBMISSIONS, ["ada", "bob", "cy", HOSTILE_ID])
    write_report(course, [
        ("01_intro", "bob", "ex2_answer", "flagged", HOSTILE_DETAIL),
        ("01_intro", "cy", "ex10_test", "tampering", "reading the answers: a reply with more than asked"),
        # a refused submission at collect: the assignment is the name the student gave the folder
        ("$\\x$", HOSTILE_ID, "", "refused submission", "a link"),
        ("02_next", "ada", "ex1_test", "timeout", "ran past its clock"),
        ("02_next", "ada", "ex1_answer", "library", "uses tensoradbook.derive"),
    ])
    return course


def section(page: str, anchor: str) -> str:
    """The page from the heading ``anchor`` to the next section's."""
    start = page.index(f"<h2 id={anchor}>")
    end = page.find("<h2 ", start + 1)
    return page[start:end if end > 0 else len(page)]


def text(fragment: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", fragment))


def test_the_numbers(course):
    view = dashboard.read_class(course, ["ada", "bob", "cy", HOSTILE_ID, "dan"])
    intro, following, nobody = view.assignments
    assert [e.name for e in intro.exercises] == ["ex1", "ex2", "ex10"]
    assert [(e.name, e.missed, e.spread) for e in intro.exercises] == [
        ("ex1", 0, (3, 0, 0)), ("ex2", 2, (1, 0, 2)), ("ex10", 1, (2, 1, 0))]
    assert [(s.student, s.seconds_late, s.score) for s in intro.late] == [("bob", 7200, 3)]
    assert intro.missing == ["dan", HOSTILE_ID]  # dan: on the roster only
    assert following.duedate is None and following.late == [] and following.missing == ["bob", "cy", "dan"]
    assert nobody.submissions == [] and len(nobody.missing) == 5

    page = dashboard.render(view)
    assert [re.search(r"<h2 id=(\w+)>", h)[1] for h in re.findall(r"<h2 id=\w+>", page)] == [
        "scores", "exercises", "missed", "stuck", "submissions", "tampering"]
    summary = dict((label, int(n)) for n, label in re.findall(r"<li><strong>(\d+)</strong>([^<]+)</li>", page))
    assert summary == {"students": 5, "assignments": 3, "submissions": 5, "late": 1, "missing": 5,
                       "tampering rows": 3}
    assert "Most missed: 01_intro · ex2 , 2 of 3 submitters below full marks" in text(section(page, "missed"))
    # dan submitted nothing; eve missed one and scored 0 on the other; bob and cy each missed one
    stuck = text(section(page, "stuck")).split("Mean score")[1]
    assert stuck.split() == ["dan", "0", "2", "—", *text(dashboard._e(HOSTILE_ID)).split(), "1", "1", "0%",
                             "bob", "1", "1", "50%", "cy", "1", "1", "50%"]
    late = text(section(page, "submissions"))
    assert "01_intro bob 2026-12-01 14:00 UTC 2026-12-01 12:00 UTC 2 h 00 min 1" in late
    assert "cy" not in late.split("Late")[1].split("Missing")[0]  # within his extension
    assert "No deadline set (nothing can be late) for: 02_next" in late
    assert "Not yet submitted by anyone (not counted as missing): 03_nobody" in late
    assert "Nobody has submitted yet: 03_nobody" in text(section(page, "exercises"))
    # the overview: submitted, late, missing, mean, median of 01_intro (scores 6, 3 after bob's penalty, 3)
    assert "01_intro 2026-12-01 12:00 UTC 3 1 2 4.0 3.0 6" in text(section(page, "scores"))
    report = text(section(page, "tampering"))
    assert "flagged" in report and "refused submission" in report and "timeout 1" in report
    assert "ran past its clock" not in report  # the other rows are counted, not listed
    # a plot per section that has data: scores, each submitted assignment's exercises, missed, status, tampering
    assert page.count('<img class="plot"') == 6


def test_totals_are_those_of_grades_csv(course):
    """The scores shown are the gradebook's as grades.csv has them (nbgrader's own export), penalties included."""
    from nbgrader.plugins import CsvExportPlugin

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        CsvExportPlugin(to=str(course / "grades.csv")).export(gradebook)
    with open(course / "grades.csv", newline="") as f:
        exported = {(r["assignment"], r["student_id"]): float(r["score"]) for r in csv.DictReader(f) if r["timestamp"]}
    shown = {(a.name, s.student): s.score for a in dashboard.read_class(course).assignments for s in a.submissions}
    assert shown == exported and shown["01_intro", "bob"] == 3


def test_student_data_is_escaped_and_nothing_is_fetched(course):
    page = dashboard.render(dashboard.read_class(course))
    assert "<script" not in page.lower() and "<img src=x" not in page
    assert "&lt;script&gt;alert(&quot;grades&quot;)&lt;/script&gt;" in page
    assert html_escaped(HOSTILE_ID) in page
    images = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", page)
    markup = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", page)
    assert not re.search(r"(https?|ftp):|//[a-z]", markup, re.I)  # no address of any kind
    assert not any(b"http" in base64.b64decode(image) for image in images)  # not in the images' metadata either
    tags = Tags()
    tags.feed(page)
    assert tags.names <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "ul", "li",
                          "strong", "nav", "a", "img", "table", "thead", "tbody", "tr", "th", "td", "span", "code"}
    assert all(value.startswith(("data:image/png;base64,", "#")) for value in tags.links)
    assert all(not name.startswith("on") for name in tags.attributes)


class Tags(HTMLParser):
    """The elements of a page, the attributes they carry and where their src and href point."""

    def __init__(self):
        super().__init__()
        self.names, self.attributes, self.links = set(), set(), []

    def handle_starttag(self, tag, attrs):
        self.names.add(tag)
        self.attributes.update(name for name, _ in attrs)
        self.links += [value or "" for name, value in attrs if name in ("src", "href")]


def html_escaped(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def test_the_gradebook_is_only_read(course):
    before = hashlib.sha256((course / "gradebook.db").read_bytes()).hexdigest()
    dashboard.build(course)
    assert hashlib.sha256((course / "gradebook.db").read_bytes()).hexdigest() == before
    assert (course / "dashboard.html").stat().st_size > 0


def test_before_any_grading(tmp_path):
    page = dashboard.render(dashboard.read_class(tmp_path, ["ada"]))
    assert "No gradebook yet at" in page and "No grading report yet at" in page
    assert "No graded submissions yet" in page and "No submissions yet" in page
    assert "<img" not in page
    assert not (tmp_path / "gradebook.db").exists()


def test_assignments_released_but_nothing_submitted(tmp_path):
    make_gradebook(tmp_path, ASSIGNMENTS, {}, ["ada"])
    write_report(tmp_path, [])
    page = dashboard.render(dashboard.read_class(tmp_path))
    assert "No submissions yet: nothing is graded" in page
    assert "Nobody has submitted yet: 01_intro, 02_next, 03_nobody" in page
    assert "No tampering rows in the report" in page
    assert "<img" not in page


def test_one_student(tmp_path):
    make_gradebook(tmp_path, {"01_intro": ASSIGNMENTS["01_intro"]},
                   {"01_intro": {"ada": SUBMISSIONS["01_intro"]["ada"]}}, ["ada"])
    page = dashboard.render(dashboard.read_class(tmp_path))
    assert "Every submission has full marks on every exercise" in page
    assert "No late submissions" in page and "No missing submissions" in page
    assert page.count('<img class="plot"') == 3  # scores, exercises, status


def test_command_line(course, tmp_path, capsys):
    roster = tmp_path / "students.csv"
    roster.write_text("username,first_name,last_name,email\nada,A,L,a@x\ndan,D,N,d@x\n")
    out = tmp_path / "page.html"
    assert dashboard.main(["--course", str(course), "--out", str(out), "--roster", str(roster)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert "<strong>5</strong>students" in out.read_text()  # dan from the roster besides the gradebook's four
    roster.write_text("name\nada\n")
    assert dashboard.main(["--course", str(course), "--out", str(out), "--roster", str(roster)]) == 1
    assert "no 'username' or 'id' column" in capsys.readouterr().err


@pytest.mark.browser
def test_in_chromium_offline(course):
    from tests.browser_support import chromium, offline_context

    page_path = dashboard.build(course)
    with chromium() as browser:
        context = offline_context(browser, viewport={"width": 1280, "height": 900})
        requests, dialogs = [], []
        page = context.new_page()
        page.on("request", lambda request: requests.append(request.url))
        page.on("dialog", lambda dialog: dialogs.append(dialog.message))  # an alert() the escaping let through
        page.goto(page_path.as_uri())
        sizes = page.eval_on_selector_all(
            "img.plot", "imgs => imgs.map(i => [i.complete, i.naturalWidth, i.getBoundingClientRect().width,"
                        " i.getBoundingClientRect().height])")
        (REPO / "screenshots").mkdir(exist_ok=True)
        page.screenshot(path=REPO / "screenshots" / "dashboard.png", full_page=True)
        context.close()
    assert len(sizes) == 6
    assert all(complete and natural > 0 and width > 0 and height > 0 for complete, natural, width, height in sizes)
    assert context.blocked == [] and dialogs == []
    assert all(url.startswith(("file:", "data:")) for url in requests), requests
