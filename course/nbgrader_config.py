"""nbgrader's configuration for the tensoradbook course: one assignment per chapter with exercises.

The course folder is the folder of this file, wherever it is copied (the tests copy it). Instructors run
``make assignments`` and ``make grade`` from the repository root (classroom/course.py), or nbgrader itself
inside this folder; ``make lab`` points its Formgrader here (--CourseDirectory.root). The exchange
(release_assignment, fetch_assignment, submit, collect) is the folder the environment variable
TENSORADBOOK_EXCHANGE names (the class server's, classroom/hub.py), else the git-ignored exchange/ beside this
file: private to its owner, and there (nbgrader's default, /usr/local/share/nbgrader/exchange, is neither, and the
Formgrader reported it missing).
"""

import os

c = get_config()  # noqa: F821 -- provided by traitlets when nbgrader loads this file

HERE = os.path.dirname(os.path.abspath(__file__))

c.CourseDirectory.course_id = "tensoradbook"
c.CourseDirectory.root = HERE
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(HERE, "gradebook.db")

EXCHANGE = os.environ.get("TENSORADBOOK_EXCHANGE") or os.path.join(HERE, "exchange")
if not os.environ.get("TENSORADBOOK_EXCHANGE"):
    os.makedirs(EXCHANGE, mode=0o700, exist_ok=True)
c.Exchange.root = EXCHANGE

# The release keeps the line `answer_1 = None` above the solution, so an untouched cell still runs: the
# check says "no answer yet" instead of the notebook stopping at NotImplementedError.
c.ClearSolutions.code_stub = {"python": "# YOUR ANSWER HERE: replace None above"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Autograding runs every notebook in the chapters' kernel; some checks enumerate schedules or run sweeps.
c.ExecutePreprocessor.timeout = 300

# Autograding runs the answers in a sandbox and the tests here (classroom/grading.py): code in an answer cell
# cannot change a check, read the course folder or stop the grading of others. Each notebook's events (a
# timeout, an exit, what looks like tampering) go to grading_reports/ and `make grade` gathers them.
try:
    from classroom.grading import HideHiddenTests, OverwriteReleasedCells, SandboxedExecute, TypesetFeedback
except ImportError:  # nbgrader started by hand or by the Formgrader: the repository's classroom/ beside course/
    import sys

    sys.path.insert(0, os.path.dirname(HERE))
    from classroom.grading import HideHiddenTests, OverwriteReleasedCells, SandboxedExecute, TypesetFeedback
from classroom.deadlines import LatePenalty  # noqa: E402
from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, ClearOutput,  # noqa: E402
                                    DeduplicateIds, GetGrades, IgnorePattern, LimitOutput, OverwriteKernelspec,
                                    SaveAutoGrades)

# nbgrader's own lists with one class replaced: an untouched cell with hidden tests is no "changed" cell
c.Autograde.sanitize_preprocessors = [ClearOutput, DeduplicateIds, OverwriteKernelspec, OverwriteReleasedCells,
                                      CheckCellMetadata]
# the feedback shows a test's verdict, not its hidden tests (the assignment can be given again), and its math
# typeset, so that it reads offline
c.GenerateFeedback.preprocessors = [GetGrades, CSSHTMLHeaderPreprocessor, HideHiddenTests]
c.GenerateFeedback.exporter_class = TypesetFeedback
c.Autograde.autograde_preprocessors = [SandboxedExecute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
                                       SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
c.SandboxedExecute.timeout = 120
c.SandboxedExecute.report_directory = os.path.join(HERE, "grading_reports")
c.SandboxedExecute.hidden = [EXCHANGE]

# Late penalties by deadlines.toml (classroom/deadlines.py): nbgrader's own AssignLatePenalties, against the due dates
# and extensions in the gradebook, with the course's rule as its plugin
c.AssignLatePenalties.plugin_class = LatePenalty
c.LatePenalty.course = HERE
