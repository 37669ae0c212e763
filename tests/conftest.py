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


# The test files that run a class (Unix users, an exchange, the repository's solutions given to a staff group)
# take the machine's class lock (tests/hub_support.one_class_at_a_time): on two workers one waited minutes for
# the other's. With ``--dist loadfile`` they go to one worker as one unit, one file after the other.
CLASS_FILES = ("tests/test_cache_trust.py", "tests/test_exchange.py", "tests/test_hub.py")


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``, with :data:`CLASS_FILES` one unit of work."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ClassFilesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return CLASS_FILES[0] if scope in CLASS_FILES else scope

    return ClassFilesTogether(config, log)
