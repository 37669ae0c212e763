"""Compiling generated CUDA kernels to PTX in a separate process, where the CUDA simulator is off: what the
kernel tests and the program tests share."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# The start of every probe: it prints {"skip": why} and stops where there is no NVVM (the cuda extra).
PREAMBLE = """
import json, sys
import tensoradbook as tab
from tensoradbook import codegen
from numba import cuda, float64
try:  # is NVVM (the cuda extra) there at all?
    cuda.compile_ptx(lambda x: None, (float64[::1],), cc=(7, 5))
except Exception as error:
    print(json.dumps({"skip": f"{type(error).__name__}: {error}"}))
    sys.exit(0)
"""


def ptx_probe(body: str, *argv: str, timeout: int = 600) -> dict:
    """``body`` after :data:`PREAMBLE` in a new process without the simulator, with ``argv``; the JSON of its
    last line. Without NVVM a skip, or a failure under CI (which installs it)."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = subprocess.run([sys.executable, "-c", PREAMBLE + body, *argv], env=env, capture_output=True, text=True,
                         cwd=REPO, timeout=timeout)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.splitlines()[-1])
    if "skip" in result:
        message = f"no PTX compiler (pip install -e '.[cuda]' brings NVVM): {result['skip']}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return result
