"""Shared test configuration: hypothesis profiles, and the CUDA simulator where there is no GPU."""

import os

# The "cuda" kernels run on Numba's CUDA simulator unless an NVIDIA driver is present; numba reads
# this once, when first imported, which no test module has done yet.
if not os.path.exists("/proc/driver/nvidia/version"):
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

from hypothesis import HealthCheck, settings

# Property tests run several hundred cases each; timing varies on shared CI machines.
settings.register_profile(
    "default", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("quick", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
