"""A room of visitors on the demo server (``make demo``: classroom.voila_room's options, one preheated kernel per
demo, the cap, culling), render times and memory.

The visitors are HTTP + websocket clients, not browsers: each does what a demo page does with the server. It
GETs the page (Voila streams it until every cell has run: ``render``, the seconds to the whole page), opens
its kernel's websocket and gets a ``kernel_info_reply`` (``ready``: the widgets can talk to their kernel), then
closes the way a page does on leaving, a POST of ``voila/api/shutdown/<kernel>`` with the ``_xsrf`` cookie
(Voila's beacon). The browser's own drawing of the widgets is not in these figures (tests/test_demo_room.py
opens every demo in chromium).

Each demo is visited ``--times`` times in turn (one visitor after the other, as students trickling in), then
``--times`` times in parallel groups of ``--group`` (a room opening the same demo at once). Memory, the RSS
of the server and of all its kernels together, is sampled throughout: at the start (every preheated kernel
drawn and the server idle), its peak, and at the end (every visitor gone, the pools refilled, idle again):
the end must come back to the start (within ``--slack`` MiB per preheated kernel, one kernel's drift). Each run's
``cpu_s_per_visit``: the CPU time of the server and its kernels over the run (the pages, the kernels handed out and
the preheating of their successors) divided among its visits, robust to other load on the machine.

Run: ``.venv/bin/python benchmarks/demo_room.py [--times 50] [--group 10] [--demos 02_kernel_lattice ...]
[--json benchmarks/results/demo_room.json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode

import psutil
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from benchmarks.gradients import machine  # noqa: E402
from classroom import demo as demos  # noqa: E402
from classroom import voila_room  # noqa: E402
from classroom import voila_serve  # noqa: E402
from tests.browser_support import free_port  # noqa: E402

VISIT_TIMEOUT_S = 600  # a parallel group on two cores starts many kernels at once
SETTLE_TIMEOUT_S = 600


def _mib(process: psutil.Process) -> float:
    try:
        return process.memory_info().rss / 2**20
    except psutil.NoSuchProcess:
        return 0.0


def memory(server: psutil.Process) -> dict:
    """The server's RSS, its kernels' together, and how many kernels, in MiB."""
    kernels = server.children(recursive=True)
    kernel_mib = sum(_mib(k) for k in kernels)
    return {"server_mib": _mib(server), "kernels_mib": kernel_mib, "total_mib": _mib(server) + kernel_mib,
            "kernels": len(kernels)}


def settle(server: psutil.Process, kernels: int) -> dict:
    """Wait until the server has ``kernels`` kernels and it and they are idle (under 5% of a CPU over 2 s)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while time.monotonic() < deadline:
        processes = [server, *server.children(recursive=True)]
        if len(processes) - 1 == kernels:
            for p in processes:
                p.cpu_percent(None)
            time.sleep(2)
            busy = 0.0
            for p in processes:
                try:
                    busy += p.cpu_percent(None)
                except psutil.NoSuchProcess:
                    busy += 100
            if busy < 5:
                return memory(server)
        else:
            time.sleep(1)
    raise TimeoutError(f"the server did not settle at {kernels} idle kernels in {SETTLE_TIMEOUT_S} s: {memory(server)}")


def _kernel_message(msg_type: str, session: str) -> str:
    header = {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "username": "room", "session": session,
              "date": "", "version": "5.3"}
    return json.dumps({"header": header, "parent_header": {}, "metadata": {}, "content": {}, "channel": "shell",
                       "buffers": []})


async def visit(base: str, stem: str) -> dict:
    """One visitor: the page, its kernel's websocket, the shutdown beacon. Seconds from the first request."""
    client = AsyncHTTPClient()
    start = time.perf_counter()
    page = await client.fetch(f"{base}/voila/render/{stem}.ipynb", request_timeout=VISIT_TIMEOUT_S)
    render = time.perf_counter() - start
    cookies = SimpleCookie()
    for header in page.headers.get_list("Set-Cookie"):
        cookies.load(header)
    cookie = "; ".join(f"{k}={m.value}" for k, m in cookies.items())
    kernel = re.search(r'"kernelId": "([^"]+)"', page.body.decode()).group(1)
    session = uuid.uuid4().hex
    socket = await websocket_connect(HTTPRequest(
        f"{base.replace('http', 'ws', 1)}/api/kernels/{kernel}/channels?session_id={session}",
        headers={"Cookie": cookie}, request_timeout=VISIT_TIMEOUT_S))
    await socket.write_message(_kernel_message("kernel_info_request", session))
    while True:
        message = await asyncio.wait_for(socket.read_message(), VISIT_TIMEOUT_S)
        if message is None:
            raise RuntimeError(f"kernel {kernel} closed its websocket")
        if json.loads(message)["header"]["msg_type"] == "kernel_info_reply":
            break
    ready = time.perf_counter() - start
    socket.close()
    await client.fetch(f"{base}/voila/api/shutdown/{kernel}", method="POST",
                       body=urlencode({"_xsrf": cookies["_xsrf"].value}), headers={"Cookie": cookie})
    return {"render_s": render, "ready_s": ready}


def _quantiles(values: list[float]) -> dict:
    ordered = sorted(values)
    p95 = ordered[round(0.95 * (len(ordered) - 1))]
    return {"median": statistics.median(ordered), "p95": p95, "max": ordered[-1]}


async def _sample_peak(server: psutil.Process, peak: dict, stop: asyncio.Event) -> None:
    while not stop.is_set():
        now = await asyncio.to_thread(memory, server)
        if now["total_mib"] > peak.get("total_mib", 0):
            peak.update(now)
        await asyncio.sleep(0.5)


def cpu_s(server: psutil.Process) -> float:
    """The CPU time of the server and of every kernel it started so far (alive, or gone and reaped by it)."""
    total = 0.0
    for process in [server, *server.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


async def room(base: str, server: psutil.Process, stems: list[str], times: int, group: int) -> tuple[list, dict]:
    peak, stop = {}, asyncio.Event()
    sampler = asyncio.create_task(_sample_peak(server, peak, stop))
    rows = []
    try:
        for stem in stems:
            for mode in ("in turn", "parallel"):
                visits, refused, cpu_before, load = [], 0, cpu_s(server), os.getloadavg()[0]
                batches = [1] * times if mode == "in turn" else [group] * (times // group) + [times % group]
                for size in filter(None, batches):
                    for result in await asyncio.gather(*(visit(base, stem) for _ in range(size)),
                                                       return_exceptions=True):
                        if isinstance(result, HTTPClientError) and result.code == 503:
                            refused += 1
                        elif isinstance(result, BaseException):
                            raise result
                        else:
                            visits.append(result)
                row = {"demo": stem, "mode": mode, "group": 1 if mode == "in turn" else group, "visits": len(visits),
                       "refused": refused, "load_average_before": load,
                       # the pages, their kernels and the preheating of the next ones, divided among the visits
                       "cpu_s_per_visit": (cpu_s(server) - cpu_before) / max(1, len(visits)),
                       **{k: _quantiles([v[f"{k}_s"] for v in visits]) for k in ("render", "ready")}}
                rows.append(row)
                print(f"{stem:24s} {mode:8s} render median {row['render']['median']:6.2f} s  p95 "
                      f"{row['render']['p95']:6.2f} s  ready median {row['ready']['median']:6.2f} s  "
                      f"({len(visits)} visits, {refused} refused; {row['cpu_s_per_visit']:.2f} CPU-s a visit, load "
                      f"{load:.2f})", flush=True)
    finally:
        stop.set()
        await sampler
    return rows, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--times", type=int, default=50, help="visits per demo, in turn and again in parallel")
    parser.add_argument("--group", type=int, default=10, help="visitors arriving at once in the parallel run")
    parser.add_argument("--demos", nargs="*", default=[d.stem for d in demos.DEMOS])
    parser.add_argument("--max-kernels", type=int, default=0, help="the cap (default: the server's default)")
    parser.add_argument("--slack", type=float, default=40, help="MiB per preheated kernel the end may exceed the start")
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    scale = demos.DEFAULT_SCALE
    max_kernels = options.max_kernels or voila_room.default_max_kernels()
    load_before = os.getloadavg()
    print(f"machine: {machine()}\nload average before: {load_before[0]:.2f} on {os.cpu_count()} CPUs; "
          f"cap {max_kernels} kernels; {options.times} visits per demo in turn and in groups of {options.group}")
    warm_start = time.perf_counter()
    demos.warm()
    voila_serve.refresh_template()
    warm_s = time.perf_counter() - warm_start
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    runtime = tempfile.mkdtemp(prefix="demo-room-")
    env = dict(os.environ, **{demos.SCALE_ENV: scale}, JUPYTER_RUNTIME_DIR=runtime,
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    options_ = voila_room.room_options(max_kernels, 1, voila_room.CULL_IDLE_MINUTES, scale)
    log = open(Path(runtime) / "voila.log", "w+")  # noqa: SIM115 -- open while the server runs
    command = voila_serve.voila_command(demos.DEMO_DIR, "127.0.0.1", port, options_)
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        server = psutil.Process(process.pid)
        preheated = len(demos.DEMOS)  # one per demo; the gallery's page is denied a preheated kernel
        start_wait = time.perf_counter()
        start = settle(server, preheated)
        print(f"start: {start} ({time.perf_counter() - start_wait:.0f} s to preheat)", flush=True)
        rows, peak = asyncio.run(room(base, server, options.demos, options.times, options.group))
        end = settle(server, preheated)
        print(f"peak: {peak}\nend: {end}")
        log.seek(0)
        forbidden = log.read().count("403 POST")
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
        log.close()
    returned = end["total_mib"] <= start["total_mib"] + options.slack * preheated and end["kernels"] == start["kernels"]
    print(f"memory back to its start: {returned} (end - start = {end['total_mib'] - start['total_mib']:+.0f} MiB); "
          f"403 on shutdown: {forbidden}")
    load_after = os.getloadavg()
    if options.json:
        options.json.parent.mkdir(parents=True, exist_ok=True)
        options.json.write_text(json.dumps({
            "machine": machine(), "clients": "HTTP + websocket (page GET, kernel_info over the kernel's websocket, "
            "the shutdown POST a page sends on leaving); not a browser", "scale": scale, "max_kernels": max_kernels,
            "times": options.times, "group": options.group, "warm_up_s": warm_s, "demos": rows,
            "memory": {"start": start, "peak": peak, "end": end, "returned": returned},
            "shutdown_403": forbidden, "load_average": {"before": load_before, "after": load_after}}, indent=1))
        print(f"wrote {options.json}")
    if not returned or forbidden:
        raise SystemExit("memory did not come back to its start" if not returned else "a shutdown was refused")


if __name__ == "__main__":
    main()
