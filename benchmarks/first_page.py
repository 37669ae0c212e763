"""A new reader's first page: a fresh clone, ``make lab``'s install with an empty pip cache, JupyterLab answering.

Clones this repository into a temporary folder, runs ``make install`` there (the extras ``make lab`` installs, pip's
cache off, so every package comes from the registry as on a fresh machine), then ``make lab`` on a free loopback
port, and polls the start page until it answers. Records each step's wall time, the install's CPU time, the
virtual environment's size and the machine's load before and after; ``--json`` writes them (benchmarks/results/
first_page.json). Goal: clone to first page under two minutes where the network allows. The network is part of
the figure: say where it ran.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.gradients import machine  # noqa: E402

GOAL_S = 120.0
START_TIMEOUT_S = 300


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def size_mb(folder: Path) -> float:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink()) / 1e6


def answered(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


def timed_install(checkout: Path) -> tuple[float, float]:
    """``make install`` in ``checkout`` with pip's cache off: its wall seconds and its children's CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(["make", "install"], cwd=checkout, env={**os.environ, "PIP_NO_CACHE_DIR": "1"}, check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def first_page(checkout: Path) -> float:
    """Seconds from ``make lab`` to its start page answering."""
    port, token = free_port(), secrets.token_hex(8)
    url = f"http://127.0.0.1:{port}/lab/tree/work/00_start_here.ipynb?token={token}"
    start = time.perf_counter()
    lab = subprocess.Popen(["make", "lab", f"PORT={port}"], cwd=checkout, env={**os.environ, "JUPYTER_TOKEN": token},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        while not answered(url):
            if time.perf_counter() - start > START_TIMEOUT_S or lab.poll() is not None:
                raise RuntimeError(f"make lab did not answer at {url}")
            time.sleep(0.2)
        return time.perf_counter() - start
    finally:
        os.killpg(lab.pid, signal.SIGTERM)
        lab.wait(60)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write the figures to PATH as JSON")
    options = parser.parse_args(argv)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        checkout = Path(tmp) / "tensoradbook"
        start = time.perf_counter()
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(checkout)], check=True)
        clone = time.perf_counter() - start
        install, install_cpu = timed_install(checkout)
        page = first_page(checkout)
        extras = (checkout / ".venv" / ".installed").read_text().strip()
        venv = size_mb(checkout / ".venv")
        shutil.rmtree(checkout / ".venv")
    total = clone + install + page
    record = {"machine": machine(), "load_before": load_before, "load_after": os.getloadavg(), "extras": extras,
              "clone_s": clone, "install_s": install, "install_cpu_s": install_cpu, "first_page_s": page,
              "total_s": total, "venv_mb": venv, "goal_s": GOAL_S, "met": total < GOAL_S}
    print(f"clone {clone:.1f} s, make install [{extras}] {install:.1f} s ({install_cpu:.0f} CPU-s, pip's cache "
          f"off), make lab to first page {page:.1f} s: {total:.1f} s in all (goal {GOAL_S:.0f} s: "
          f"{'met' if record['met'] else 'NOT met'}); .venv/ {venv:.0f} MB; load {load_before[0]:.2f} before")
    if options.json:
        Path(options.json).write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
