"""What the browser tests share: finding chromium, free loopback ports, starting a server (JupyterLab, Voila,
a static file server) as a process group and stopping it with its kernels, and an offline browser context in
which every request that leaves loopback is aborted (and recorded), as in a lecture hall without a network.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
HOW_TO_INSTALL = (
    "install it with `apt-get install -y chromium` (Debian; sudo if not root) and "
    "`make install` (playwright), or point BOOK_CHROMIUM at a chromium binary"
)
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}


def skip_or_fail(why: str):
    message = f"{why}; {HOW_TO_INSTALL}"
    if IN_CI:
        pytest.fail(f"CI=true and {message}", pytrace=False)
    pytest.skip(message)


def find_chromium() -> str | None:
    candidates = [os.environ.get("BOOK_CHROMIUM"), "/usr/bin/chromium"]
    candidates += [shutil.which(n) for n in ("chromium", "chromium-browser")]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_chromium():
    """(playwright, browser) for headless chromium, or a skip (a failure under CI) saying what is missing."""
    chromium = find_chromium()
    if chromium is None:
        skip_or_fail("chromium is not installed")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("playwright is not installed")
    pw = sync_playwright().start()
    try:
        return pw, pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
    except Exception:
        pw.stop()
        raise


@contextlib.contextmanager
def chromium():
    pw, browser = launch_chromium()
    try:
        yield browser
    finally:
        browser.close()
        pw.stop()


def is_loopback(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about", "file"):  # file: the static site opened from disk
        return True
    host = (parts.hostname or "").lower()
    return host in LOOPBACK_HOSTS or host.startswith("127.")


def offline_context(browser, **options):
    """A browser context that aborts every request leaving loopback; ``context.blocked`` lists their URLs."""
    context = browser.new_context(**options)
    context.blocked = []

    def route(r):
        if is_loopback(r.request.url):
            r.continue_()
        else:
            context.blocked.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    return context


def stop_process_group(proc: subprocess.Popen, shutdown_url: str | None = None, token: str | None = None) -> None:
    """Ask a Jupyter server to shut down (it stops its kernels), then end its process group."""
    if proc.poll() is None and shutdown_url:
        try:
            headers = {"Authorization": f"token {token}"} if token else {}
            req = urllib.request.Request(shutdown_url, method="POST", headers=headers)
            urllib.request.urlopen(req, timeout=5).close()
            proc.wait(timeout=15)
        except Exception:
            pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            continue
    # the session's other processes (kernels) may outlive the leader
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


@contextlib.contextmanager
def server(cmd: list[str], ready_url: str, log_path: Path, *, cwd=None, env=None, start_s: float = 90,
           shutdown_url: str | None = None, token: str | None = None):
    """Run ``cmd`` in its own process group until ``ready_url`` answers 200; stop it (and its children) after."""
    log = open(log_path, "w+")  # noqa: SIM115 -- open while the server runs, closed at the end
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + start_s
        while True:
            if proc.poll() is not None:
                log.seek(0)
                pytest.fail(f"{cmd[:3]} exited with {proc.returncode}:\n{log.read()[-4000:]}")
            try:
                with urllib.request.urlopen(ready_url, timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                log.seek(0)
                pytest.fail(f"{cmd[:3]} did not answer within {start_s:.0f} s:\n{log.read()[-4000:]}")
            time.sleep(0.3)
        yield proc
    finally:
        stop_process_group(proc, shutdown_url, token)
        log.close()


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


@contextlib.contextmanager
def jupyterlab(root: Path, env: dict, log_path: Path):
    """A JupyterLab server on ``root`` (a free loopback port, a random token, no news or update checks) until
    the block ends: yields ``(base_url, token)``."""
    token = secrets.token_hex(24)
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    cmd = [
        sys.executable, "-m", "jupyterlab",
        "--no-browser",
        f"--IdentityProvider.token={token}",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # CI containers run as root
        cmd.append("--ServerApp.allow_root=True")
    with server(cmd, f"{base_url}/api/status?token={token}", log_path, cwd=root, env=env,
                shutdown_url=f"{base_url}/api/shutdown", token=token):
        yield base_url, token
