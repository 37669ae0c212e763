"""Voila for a lecture hall (``make demo``): kernels end with their page, idle ones are culled, preheated ones
render a demo at once, and a cap on kernels turns a page away with a page that says why.

Voila's own settings do most of it (:func:`room_options`); two small classes do the rest:

* :class:`PageIdentityProvider` gives every page the ``_xsrf`` cookie. Voila's page posts its kernel's
  shutdown on leaving (``navigator.sendBeacon(voila/api/shutdown/<id>)``, with ``_xsrf`` read from
  ``document.cookie``), but Voila's render handler never reads ``self.xsrf_token``, so tornado never sets the
  cookie, the beacon sends an empty ``_xsrf`` and the server answers ``403 '_xsrf' argument missing`` and
  keeps the kernel (voila-dashboards/voila#1458).
* :class:`RoomKernelManager` refuses a kernel beyond ``max_kernels`` with HTTP 503, which Voila shows with
  the demo template's ``503.html``; a preheated pool whose refill was refused fills again when a kernel ends.
"""

from __future__ import annotations

import os

from jupyter_core.utils import ensure_async
from jupyter_server.auth.identity import PasswordIdentityProvider
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado.web import HTTPError
from traitlets import Integer
from voila.handler import VoilaHandler

#: What one demo kernel holds once its widget is drawn (200-320 MB measured, see benchmarks/demo_room.py).
KERNEL_MB = 320
#: A kernel idle this long (no message from its page: no click, no slider) is culled, page open or not.
CULL_IDLE_MINUTES = 20


def default_max_kernels(fraction: float = 0.75) -> int:
    """As many kernels as ``fraction`` of this machine's memory holds at :data:`KERNEL_MB` each."""
    total_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    return max(4, int(total_mb * fraction) // KERNEL_MB)


class PageIdentityProvider(PasswordIdentityProvider):
    """Voila's identity provider that also sets the ``_xsrf`` cookie on every Voila page, for the shutdown
    beacon the page sends when it closes (see the module's docstring)."""

    async def get_user(self, handler):
        user = await ensure_async(super().get_user(handler))
        if user is not None and isinstance(handler, VoilaHandler):
            handler.current_user = user  # tornado's xsrf_token reads it; prepare() sets the same right after
            handler.xsrf_token  # noqa: B018 -- reading it sets the cookie when the request brings none
        return user


class RoomKernelManager(AsyncMappingKernelManager):
    """Jupyter's kernel manager with a cap: a kernel beyond ``max_kernels`` (preheated ones included) is
    refused with HTTP 503."""

    max_kernels = Integer(0, config=True, help="the most kernels alive at once, preheated ones included; 0: no cap")

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._starting = 0  # kernels being started, not yet listed: requests at the same moment count them

    async def start_kernel(self, **kwargs):
        if self.max_kernels and len(self) + self._starting >= self.max_kernels:
            self.log.warning("kernel refused: %d kernels alive, the cap is %d", len(self), self.max_kernels)
            raise HTTPError(503, "All %d kernels of this demo server are in use", self.max_kernels,
                            reason="Demo server full")
        self._starting += 1
        try:
            return await ensure_async(super().start_kernel(**kwargs))
        finally:
            self._starting -= 1

    async def shutdown_kernel(self, kernel_id, *args, **kwargs):
        await ensure_async(super().shutdown_kernel(kernel_id, *args, **kwargs))
        self._refill_pools()

    def _refill_pools(self) -> None:
        """Refill the preheated pools whose refill the cap refused: Voila keeps the refused task in the pool,
        which would turn the next visitor away once there is room again."""
        for notebook, pool in getattr(self, "_pools", {}).items():  # Voila's pools, when it preheats
            pool[:] = [task for task in pool if not (task.done() and (task.cancelled() or task.exception()))]
            self.fill_if_needed(notebook_name=notebook)


#: Every Voila page (a demo, a chapter's slides) ends its kernel when it closes.
SHUTDOWN_ON_CLOSE = f"--Voila.identity_provider_class={__name__}.PageIdentityProvider"


def room_options(max_kernels: int, pool_size: int, cull_idle_minutes: float, scale: str) -> list[str]:
    """Voila's options for a room: the cap, culling, ``pool_size`` preheated kernels per demo (0: none),
    shutdown on page close, and the presentation ``scale`` for the demo template's style sheet."""
    options = [
        SHUTDOWN_ON_CLOSE,
        f"--VoilaConfiguration.multi_kernel_manager_class={__name__}.RoomKernelManager",
        f"--RoomKernelManager.max_kernels={max_kernels}",
        # Jupyter's culler: an idle kernel ends even with its page open (a laptop closed mid-lecture keeps
        # its websocket); a busy one (a long Run) is left alone.
        f"--MappingKernelManager.cull_idle_timeout={int(cull_idle_minutes * 60)}",
        "--MappingKernelManager.cull_interval=60",
        "--MappingKernelManager.cull_connected=True",
        f"--VoilaConfiguration.resources=scale={float(scale)}",  # key=value: traitlets 5's form for a dict
    ]
    if pool_size:
        # the gallery's page runs no code: a preheated kernel there would be memory for nothing
        options += ["--VoilaConfiguration.preheat_kernel=True", f"--VoilaConfiguration.default_pool_size={pool_size}",
                    "--VoilaKernelManager.preheat_denylist=index.ipynb"]
    return options
