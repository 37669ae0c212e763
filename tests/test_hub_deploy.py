"""The Kubernetes deployment (hub/k8s/) in step with `make hub`: one course, described twice.

``make hub`` reads hub/course.toml; Zero to JupyterHub reads hub/k8s/values.yaml and runs the image of
hub/k8s/Dockerfile, neither of which can read it. This reads all three (the settings with tomllib, as written) and
checks that they name the same image contents, exchange, course and kernel-cache paths, culler timeout, memory
limit, thread settings, instructors, students and authenticator. Nothing here needs Docker or a cluster.
"""

import csv
import re
import shlex
import tomllib
from pathlib import Path

import pytest
import yaml

from classroom.hub import load_settings, thread_environment, user_environment

REPO = Path(__file__).resolve().parents[1]
HUB = REPO / "hub"
#: course.toml's authenticator -> the class values.yaml must name (an OAuth provider: any of OAuthenticator's)
AUTHENTICATORS = {
    "native": {"firstuseauthenticator.FirstUseAuthenticator"},
    "oauth": {"generic-oauth", "github", "azuread", "oauthenticator.generic.GenericOAuthenticator",
              "oauthenticator.github.GitHubOAuthenticator", "oauthenticator.azuread.AzureAdOAuthenticator"},
    "lti13": {"ltiauthenticator.lti13.auth.LTI13Authenticator"},
}


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """The Dockerfile's instructions in order, as (INSTRUCTION, arguments): continuations joined, comments out,
    runs of blanks one space."""
    found, pending = [], ""
    for line in dockerfile.read_text().splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        pending += line.rstrip().removesuffix("\\") + " "
        if not line.rstrip().endswith("\\"):
            keyword, _, rest = pending.strip().partition(" ")
            found.append((keyword.upper(), " ".join(rest.split())))
            pending = ""
    return found


@pytest.fixture(scope="module")
def settings() -> dict:
    with open(HUB / "course.toml", "rb") as f:
        return tomllib.load(f)


@pytest.fixture(scope="module")
def values() -> dict:
    return yaml.safe_load((HUB / "k8s" / "values.yaml").read_text())


@pytest.fixture(scope="module")
def image() -> list[tuple[str, str]]:
    return instructions(HUB / "k8s" / "Dockerfile")


def environment(image) -> dict[str, str]:
    return dict(token.split("=", 1) for keyword, rest in image if keyword == "ENV" for token in shlex.split(rest))


def runs(image) -> list[str]:
    return [rest for keyword, rest in image if keyword == "RUN"]


def test_the_image_holds_the_project_with_the_extras_of_the_hubs_environment(image):
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    (install,) = [run for run in runs(image) if "pip install" in run]
    (book,) = [rest.split()[-1] for keyword, rest in image if keyword == "COPY" and rest.split()[0] == "."]
    extras = re.search(rf'-e "{re.escape(book)}\[([a-z,]+)\]"', install)
    assert extras, f"the image does not install the project from {book} with its extras: {install}"
    extras = set(extras.group(1).split(","))
    assert extras <= set(pyproject["project"]["optional-dependencies"])
    # what `make hub`'s environment gives a user server: the extras the Makefile installs for make hub
    makefile = re.search(r"filter hub,\$\(MAKECMDGOALS\)\),\)\nEXTRAS \?= (\S+)$", (REPO / "Makefile").read_text(),
                         re.MULTILINE).group(1)
    assert set(makefile.split(",")) <= extras
    assert re.search(r'"jupyterhub==\$JUPYTERHUB_VERSION"', install)
    (version,) = [rest for keyword, rest in image if keyword == "ARG" and rest.startswith("JUPYTERHUB_VERSION=")]
    assert version == "JUPYTERHUB_VERSION=5.*"  # the z2jh chart 4.x's hub, which values.yaml names
    assert environment(image)["PYTHONPATH"] == book  # classroom/, which the course and the kernel import


def test_the_paths_are_the_settings(settings, values, image):
    paths = settings["paths"]
    env = environment(image)
    assert env["TENSORADBOOK_EXCHANGE"] == paths["exchange"]
    assert env["TENSORADBOOK_SHARED_CACHE"] == paths["kernel_cache"]
    assert env["JUPYTER_PATH"] == f"{paths['jupyter']}/share"  # the hub's python3 kernel, as classroom/hub.py
    storage = values["singleuser"]["storage"]
    (volume,) = [v for v in storage["extraVolumes"] if v["name"] == "exchange"]
    assert volume["persistentVolumeClaim"]["claimName"] == "tensoradbook-exchange"
    assert [m["mountPath"] for m in storage["extraVolumeMounts"] if m["name"] == "exchange"] == [paths["exchange"]]
    (init,) = values["singleuser"]["initContainers"]
    assert init["volumeMounts"] == [{"name": "exchange", "mountPath": paths["exchange"]}]
    assert init["command"][-1] == f"chmod 1777 {paths['exchange']}"
    extra = values["hub"]["extraConfig"]["tensoradbook"]
    assert f'COURSE = "{paths["course"]}"' in extra and f'JUPYTER = "{paths["jupyter"]}"' in extra
    claims = [doc["metadata"]["name"] for doc in yaml.safe_load_all((HUB / "k8s" / "volumes.yaml").read_text())]
    assert claims == ["tensoradbook-exchange", "tensoradbook-course"] and '"claimName": "tensoradbook-course"' in extra


def test_the_image_warms_the_kernel_cache_it_names_with_its_runtime_settings(settings, image):
    cache = settings["paths"]["kernel_cache"]
    warm = [k for k, (keyword, rest) in enumerate(image)
            if keyword == "RUN" and rest == f"python -m classroom.warm_cache --into {cache}"]
    assert warm, f"the image does not warm {cache}"
    # every setting the servers run with is set before the warming (Numba's target CPU is in its cache keys)
    assert all(k < warm[0] for k, (keyword, _) in enumerate(image) if keyword == "ENV")
    assert environment(image)["NUMBA_CPU_NAME"] == "generic"
    setup = [k for k, (keyword, rest) in enumerate(image) if keyword == "RUN" and "hub.setup_jupyter" in rest]
    assert setup and setup[0] < warm[0]  # the chapters warm in the hub's python3 kernel


def test_the_limits_and_threads_are_the_settings(settings, values, image):
    limits = settings["limits"]
    singleuser = values["singleuser"]
    # both read "1G" as 2**30 bytes (classroom.hub.parse_bytes; JupyterHub's ByteSpecification for KubeSpawner)
    assert singleuser["memory"]["limit"] == limits["memory"]
    assert singleuser["cpu"]["limit"] == limits["threads"]
    assert values["cull"]["enabled"] is True and values["cull"]["timeout"] == limits["cull_idle_seconds"]
    assert thread_environment(limits["threads"]).items() <= environment(image).items()


def test_a_server_gets_the_environment_make_hub_gives_it(settings, values, image):
    """All but what depends on the machine: where Python and the book are (PATH, PYTHONPATH, checked above) and the
    role's configuration folder, which values.yaml's course_role sets per user as classroom/hub.py does."""
    with open(HUB / settings["course"]["students"], newline="") as f:
        student = next(csv.DictReader(f))["username"]
    wanted = user_environment(load_settings(HUB / "course.toml"), student)
    expected = {key: value for key, value in wanted.items() if key not in ("PATH", "PYTHONPATH", "JUPYTER_CONFIG_PATH")}
    env = environment(image)
    assert {key: env.get(key) for key in expected} == expected
    assert "JUPYTER_CONFIG_PATH" not in env
    assert 'spawner.environment["JUPYTER_CONFIG_PATH"] = f"{JUPYTER}/' in values["hub"]["extraConfig"]["tensoradbook"]


def test_the_instructors_students_and_authenticator_are_the_settings(settings, values):
    config = values["hub"]["config"]
    instructors = settings["course"]["instructors"]
    with open(HUB / settings["course"]["students"], newline="") as f:
        students = [row["username"].strip() for row in csv.DictReader(f)]
    assert config["Authenticator"]["admin_users"] == instructors
    assert config["Authenticator"]["allowed_users"] == instructors + students
    assert config["JupyterHub"]["authenticator_class"] in AUTHENTICATORS[settings["server"]["authenticator"]]


def test_the_images_are_the_one_built(values):
    image = values["singleuser"]["image"]
    assert values["singleuser"]["initContainers"][0]["image"] == f"{image['name']}:{image['tag']}"


def test_the_solutions_stay_out_of_the_students_reach(image, values):
    """The course (its exercise files and sources) holds every solution: the image keeps it in a folder of root's
    alone (the book itself is readable by all), the tests with their right answers are not built in, and only an
    instructor's server gets the course, on its own volume."""
    (book,) = [rest.split()[-1] for keyword, rest in image if keyword == "COPY" and rest.split()[0] == "."]
    (move,) = [run for run in runs(image) if "instructor-only" in run]
    assert move.startswith("install -d -m 700 /srv/tensoradbook/instructor-only && mv ")
    assert f"{book}/course" in move.split()
    assert "tests" in (HUB / "k8s" / "Dockerfile.dockerignore").read_text().split()
    extra = values["hub"]["extraConfig"]["tensoradbook"]
    assert "cp -R /srv/tensoradbook/instructor-only/course/. {COURSE}/" in extra
