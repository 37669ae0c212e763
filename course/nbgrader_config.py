"""nbgrader's configuration for the tensoradbook course: one assignment per chapter with exercises.

The course folder is the folder of this file, wherever it is copied (the tests copy it). Instructors run
``make assignments`` and ``make grade`` from the repository root (classroom/course.py), or nbgrader itself
inside this folder. The exchange (release_assignment, fetch_assignment, submit, collect) is nbgrader's default,
/usr/local/share/nbgrader/exchange, unless the environment variable TENSORADBOOK_EXCHANGE names another folder.
"""

import os

c = get_config()  # noqa: F821 -- provided by traitlets when nbgrader loads this file

HERE = os.path.dirname(os.path.abspath(__file__))

c.CourseDirectory.course_id = "tensoradbook"
c.CourseDirectory.root = HERE
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(HERE, "gradebook.db")

if os.environ.get("TENSORADBOOK_EXCHANGE"):
    c.Exchange.root = os.environ["TENSORADBOOK_EXCHANGE"]

# The release keeps the line `answer_1 = None` above the solution, so an untouched cell still runs: the
# check says "no answer yet" instead of the notebook stopping at NotImplementedError.
c.ClearSolutions.code_stub = {"python": "# YOUR ANSWER HERE: replace None above"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Autograding runs every notebook in the chapters' kernel; some checks enumerate schedules or run sweeps.
c.ExecutePreprocessor.timeout = 300
