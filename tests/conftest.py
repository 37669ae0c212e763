"""Shared test configuration: hypothesis profiles, and the CUDA simulator where there is no GPU."""

import os

# The "cuda" kernels run on Numba's CUDA simulator unless an NVIDIA driver is present; numba reads
# this once, when first imported, which no test module has done yet.
if not os.path.exists("/proc/driver/nvidia/version"):
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

from hypothesis import HealthCheck, settings

# CI=true (GitHub Actions, .ci/run), as tests/test_browser.py reads it.
IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")

# Property tests run several hundred cases each; timing varies on shared CI machines.
settings.register_profile(
    "default", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
# CI runs the same examples every time, so a change is never rejected by chance; local runs keep
# exploring ("default"), and hypothesis' example database (.hypothesis/) replays what they find.
# Every case hypothesis finds must be added to its test as an explicit @example(...): only then does
# CI, which never draws it, keep checking the fix.
settings.register_profile(
    "ci", parent=settings.get_profile("default"), derandomize=True, database=None, print_blob=True
)
settings.register_profile("quick", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if IN_CI else "default"))
