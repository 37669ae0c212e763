"""Fresh arrays of compiled modules reuse freed memory rather than faulting in new pages (codegen.scratch).
Each case runs in a new interpreter: glibc's thresholds are process-wide and set once."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CALLS = """
import json, resource
import numpy as np
import tensoradbook as tab
from tensoradbook.codegen.scratch import keep_freed_memory
fn = tab.parse("f[i; j] = x[i; j] * 2", {"f": (1024, 1024), "x": (1024, 1024)})
compiled = fn.compile("numba")
x = np.ones((1024, 1024))
for _ in range(3):
    compiled({"x": x})
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    assert compiled({"x": x})[1023, 1023] == 2.0
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10
print(json.dumps({"faults_per_call": faults, "set": keep_freed_memory()}))
"""
PAGES = 1024 * 1024 * 8 // 4096  # of the 8 MiB output, in 4 KiB pages


def run(env_extra: dict) -> dict:
    import json

    env = {key: value for key, value in os.environ.items() if not key.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", CALLS], env={**env, **env_extra}, capture_output=True, text=True,
                         timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_call_reuses_the_memory_the_last_one_freed():
    got = run({})
    assert got["set"] == {"MALLOC_MMAP_THRESHOLD_": 32 << 20, "MALLOC_TRIM_THRESHOLD_": 64 << 20}
    assert got["faults_per_call"] < PAGES / 16, got


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_thresholds_given_in_the_environment_are_kept():
    got = run({"MALLOC_TRIM_THRESHOLD_": "131072"})
    assert got["set"] == {"MALLOC_MMAP_THRESHOLD_": 32 << 20}
