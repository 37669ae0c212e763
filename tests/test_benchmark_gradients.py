"""benchmarks/gradients.py runs end to end: the behaviour, not the timings.

``--quick`` runs one tiny size once; the test checks that it exits cleanly, that our kernels and
their scatter baseline were checked and timed, and that each peer (PyTorch, JAX; the optional
``bench`` extra) was checked equal to ours where it is installed and reported skipped where not.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).resolve().parent.parent / "benchmarks" / "gradients.py"
PEERS = ("torch", "jax")


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "gradients.json"
    run = subprocess.run([sys.executable, str(BENCHMARK), "--quick", "--json", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout, json.loads(out.read_text())


def test_ours_and_the_scatter_baseline_are_checked_and_timed(quick_run):
    _, figures = quick_run
    (record,) = figures["sizes"]
    assert record["size"] == {"I": 8, "J": 6, "K": 4}
    assert record["ours_vs_reference_error"] < 1e-9
    for name in ("ours", "ours-scatter"):
        row = record["implementations"][name]
        assert row["checked"] and row["max_error_vs_ours"] < 1e-9
        assert row["forward_s"] > 0 and row["full_s"] > 0
    (verdict,) = figures["goals"]
    assert verdict["cheap_gradient_ratio"] > 0 and verdict["gather_over_scatter"] > 0
    assert verdict["met"]["memory"] is None  # a few hundred bytes: below what the high-water mark resolves


def importable(module):
    """Whether ``module`` imports, tried in a fresh interpreter (PyTorch and JAX are heavy to load here)."""
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


@pytest.mark.parametrize("peer", PEERS)
def test_a_peer_is_checked_equal_when_installed_and_skipped_otherwise(quick_run, peer):
    printed, figures = quick_run
    row = figures["sizes"][0]["implementations"][peer]
    if not importable(peer):
        assert "skipped" in row and peer in figures["skipped"]
        assert f"{peer}: skipped" in printed
    else:
        assert row["checked"] and row["max_error_vs_ours"] < 1e-9
        assert row["full_s"] > 0 and peer not in figures["skipped"]


def test_the_summary_and_thread_note_are_printed(quick_run):
    printed, figures = quick_run
    assert "Goals for ours" in printed and "ours (numba)" in printed
    assert figures["threads"] >= 1 and "confined to CPUs" in figures["thread_control"]
