"""Where the classroom finds the book: the repository's folders and the names that several modules share."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: The chapters, committed with their outputs.
NOTEBOOKS = REPO / "notebooks"
#: The nbgrader course (its config is course/nbgrader_config.py).
COURSE = REPO / "course"
#: The instructor's side of every chapter's exercises, one file per chapter (classroom/assignments.py).
EXERCISES = COURSE / "exercises"
#: The environment variable that points nbgrader's exchange elsewhere (read by course/nbgrader_config.py).
EXCHANGE_ENV = "TENSORADBOOK_EXCHANGE"
#: The folder under which the site's, the decks' and the demos' pages find the assets they load (a URL segment).
ASSETS_URL = "assets"
#: A widget's view in a notebook's outputs, and the widgets' state in its metadata.
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE_MIME = "application/vnd.jupyter.widget-state+json"
