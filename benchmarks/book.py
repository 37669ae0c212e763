"""One build of the book: every chapter executed in place, its run time and the build's stamp recorded.

``make book`` runs the benchmarks whose figures the chapters quote, then this: the start page last, because
it totals the chapters' estimated times. ``benchmarks/results/book.json`` gets the date, the machine and its
load, the versions, and each chapter's run time; the chapters read their estimated times from it
(``notebooks/bookdata.py``). A chapter whose estimated time changed with this build's run times is executed
once more, so that the stored text and the file agree (strict nbval compares them).

Run: ``.venv/bin/python benchmarks/book.py [--only 06a_kernels ...]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks.* beside this file

from benchmarks.gradients import machine  # noqa: E402
from classroom.warm_cache import execute  # noqa: E402  (a chapter in place, in the venv's kernel)

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
RECORD = ROOT / "benchmarks" / "results" / "book.json"


def estimates() -> dict[str, int]:
    sys.path.insert(0, str(NOTEBOOKS))
    import importlib

    import bookdata

    importlib.reload(bookdata)
    return {stem: bookdata.estimated_minutes(stem)["total"] for stem in bookdata.chapters()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="execute only these chapters (stems); the others keep their time")
    args = parser.parse_args(argv)
    import numba
    import numpy

    import tensoradbook

    record = json.loads(RECORD.read_text()) if RECORD.exists() else {"chapters": {}}
    record.update(date=datetime.date.today().isoformat(), machine=machine(),
                  load_average={"before": os.getloadavg()[0]},
                  versions={"tensoradbook": tensoradbook.__version__, "numpy": numpy.__version__,
                            "numba": numba.__version__, "python": sys.version.split()[0]})
    RECORD.write_text(json.dumps(record, indent=1) + "\n")  # the stamp the start page shows: this build's
    chapters = sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]*.ipynb") if not p.stem.startswith("00"))
    if args.only:
        chapters = [p for p in chapters if p.stem in args.only]
    before = estimates()
    for path in chapters:
        seconds = execute(path)
        record["chapters"][path.stem] = {"run_s": round(seconds, 1)}
        print(f"{path.stem}: {seconds:.1f} s", flush=True)
    record["load_average"]["after"] = os.getloadavg()[0]
    RECORD.write_text(json.dumps(record, indent=1) + "\n")
    after = estimates()
    for path in chapters:
        if after[path.stem] != before[path.stem]:  # its stored estimate came from the last build's time
            execute(path)
            print(f"{path.stem}: again, its estimate is now {after[path.stem]} minutes", flush=True)
    execute(NOTEBOOKS / "00_start_here.ipynb")
    print(f"built: {len(chapters)} chapters and the start page; {RECORD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
