"""JupyterHub's configuration for the class server (``make hub``): everything a lecturer sets is in course.toml.

Read through classroom/hub.py (``load_settings``; ``$TENSORADBOOK_HUB_SETTINGS`` names another settings file).
Started by ``python -m classroom.hub serve`` as root, in the state directory, after the users, the exchange, the
course and the user servers' configuration are in place.
"""

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from jupyterhub.spawner import LocalProcessSpawner  # noqa: E402

from classroom import hub  # noqa: E402

c = get_config()  # noqa: F821 -- provided by traitlets when JupyterHub loads this file
settings = hub.load_settings()
users = settings.usernames()

# --- where it listens, where it keeps its state -------------------------------------------------------------
c.JupyterHub.bind_url = f"http://{settings.ip}:{settings.port}/"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = settings.hub_port
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{settings.proxy_api_port}"
c.ConfigurableHTTPProxy.command = [str(hub.PROXY)]
# kept: a restarted hub finds the proxy that is still running (and the servers behind it)
c.ConfigurableHTTPProxy.auth_token = hub.secret_file(settings, "proxy_auth_token")
c.JupyterHub.db_url = f"sqlite:///{settings.state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(settings.state / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = str(settings.state / "jupyterhub-proxy.pid")
c.JupyterHub.pid_file = str(settings.state / "jupyterhub.pid")
# a restart of the hub (an upgrade, a crash) leaves the students' servers running, and finds them again
c.JupyterHub.cleanup_servers = False
c.JupyterHub.cleanup_proxy = False

# --- who logs in ------------------------------------------------------------------------------------------
c.Authenticator.allowed_users = set(users)
c.Authenticator.admin_users = set(settings.instructors)
if settings.authenticator == "native":
    # the first login of a listed user sets their password (FirstUseAuthenticator); no one else gets in
    c.JupyterHub.authenticator_class = "firstuseauthenticator.FirstUseAuthenticator"
    c.FirstUseAuthenticator.create_users = False
    c.FirstUseAuthenticator.min_password_length = 8
    c.FirstUseAuthenticator.dbm_path = str(settings.state / "passwords.dbm")
elif settings.authenticator == "dummy-testing-only":
    print("WARNING: authenticator 'dummy-testing-only': anyone listed logs in with the shared password "
          "(TENSORADBOOK_HUB_DUMMY_PASSWORD): for tests only", file=sys.stderr)
    c.JupyterHub.authenticator_class = "dummy"
    c.DummyAuthenticator.password = os.environ["TENSORADBOOK_HUB_DUMMY_PASSWORD"]
else:  # oauth, lti13: the settings of hub/README.md go into hub/authenticator_config.py
    extra = Path(__file__).with_name("authenticator_config.py")
    if not extra.exists():
        raise SystemExit(f"authenticator {settings.authenticator!r}: write {extra} as hub/README.md shows")
    load_subconfig(str(extra))  # noqa: F821 -- provided by traitlets


# --- the students' servers ----------------------------------------------------------------------------------
class CourseSpawner(LocalProcessSpawner):
    """LocalProcessSpawner (each server as its Unix user) whose servers start under hard limits set as root
    (classroom.hub.apply_server_limits: memory per process, processes per user; LocalProcessSpawner itself
    enforces no mem_limit), each on a port of its own (classroom.hub.user_port)."""

    async def start(self):
        if self.port == 0:
            self.port = hub.user_port(settings, self.user.name)
        return await super().start()

    def make_preexec_fn(self, name):
        switch_user = super().make_preexec_fn(name)

        def preexec():
            hub.apply_server_limits(settings)
            switch_user()

        return preexec


def per_user(spawner):
    name = spawner.user.name
    spawner.environment.update(hub.user_environment(settings, name))
    spawner.notebook_dir = hub.notebook_dir(settings, name)


c.JupyterHub.spawner_class = CourseSpawner
c.Spawner.pre_spawn_hook = per_user
c.Spawner.cmd = [str(Path(sys.executable).parent / "jupyterhub-singleuser")]
c.Spawner.ip = "127.0.0.1"  # user servers on loopback only, reached through the proxy
c.Spawner.default_url = "/lab"
c.Spawner.mem_limit = settings.memory  # shown to the server (and the k8s values); enforced by the rlimits above
c.Spawner.cpu_limit = float(settings.threads)
c.Spawner.start_timeout = 180  # 40 servers starting at once on 2 cores
c.Spawner.http_timeout = 180
c.JupyterHub.concurrent_spawn_limit = 0
c.JupyterHub.active_server_limit = 0

# --- the idle culler --------------------------------------------------------------------------------------
c.JupyterHub.services = [{
    "name": "idle-culler",
    "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={settings.cull_idle_seconds}",
                f"--cull-every={max(10, min(300, settings.cull_idle_seconds // 4))}"],
}, {  # `python -m classroom.hub start-servers` before a lecture, as root (the token is root's, in the state folder)
    "name": hub.STARTER,
    "api_token": hub.secret_file(settings, "starter_token"),
}]
c.JupyterHub.load_roles = [{
    "name": "idle-culler",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    "services": ["idle-culler"],
}, {
    "name": hub.STARTER,
    "scopes": hub.STARTER_SCOPES,
    "services": [hub.STARTER],
}]
