"""Shared test configuration: hypothesis profiles and the exact-algebra oracles."""

import os

from hypothesis import HealthCheck, settings

# Property tests run several hundred cases each; timing varies on shared CI machines.
settings.register_profile(
    "default", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("quick", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
