"""dcdrill as its users get it: a wheel that carries roles, experiments, playbook and JVM sources;
`dcdrill init` in their own folder; stacks found from the current folder as `pulumi` finds them;
and (on the lab) a drill run by the installed tool from that folder."""

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest
import yaml

from dcdrill import project
from dcdrill.infra import constants, schema
from dcdrill.infra import stack as stacks
from dcdrill.infra.constants import cache_dir, state_dir
from tests import ROOT as SOURCE
from tests.chaos.test_drill_integration import SLOW_LINK, check_slow_link_drill
from tests.lab_access import TEST_RATE

PYPROJECT = tomllib.loads((SOURCE / "pyproject.toml").read_text())


def test_every_example_stack_ships_in_the_wheel():
    shipped = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert {p.name for p in SOURCE.glob("Pulumi.*.yaml")} <= set(shipped)


def test_the_lock_pins_every_dependency_within_its_range():
    from packaging.requirements import Requirement

    locked = {}
    for line in (SOURCE / "requirements.lock").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            locked[name.lower().replace("_", "-")] = version
    deps = PYPROJECT["project"]["dependencies"] + sum(PYPROJECT["project"]["optional-dependencies"].values(), [])
    for dep in map(Requirement, deps):
        name = dep.name.lower().replace("_", "-")
        if name == "dcdrill":  # an extra that names others of its own
            continue
        assert name in locked, f"{dep.name} is not in requirements.lock"
        assert dep.specifier.contains(locked[name]), f"{dep.name}=={locked[name]} is outside {dep.specifier}"


def test_init_writes_a_project_whose_stacks_are_found_from_it(tmp_path, monkeypatch):
    written = project.init(tmp_path)
    assert yaml.safe_load((tmp_path / "Pulumi.yaml").read_text())["main"] == "program/"
    assert {"Pulumi.yaml", "program", "Pulumi.local.yaml", ".github", ".gitignore"} <= {
        p.name for p in tmp_path.iterdir()
    }
    assert tmp_path / ".github/workflows/dcdrill.yml" in written
    assert project.init(tmp_path) == []  # a second init changes nothing
    # The schema every stack names for editors is there, and what a plain `chaos run` leaves is ignored.
    assert "# yaml-language-server: $schema=docs/stack.schema.json" in (tmp_path / "Pulumi.local.yaml").read_text()
    assert json.loads((tmp_path / "docs/stack.schema.json").read_text()) == schema.json_schema()
    assert {"chaostoolkit.log", "discovery.json", "runs/"} <= set((tmp_path / ".gitignore").read_text().split())
    (tmp_path / "Pulumi.my-lab.yaml").write_text((tmp_path / "Pulumi.local.yaml").read_text())
    monkeypatch.delenv("DCDRILL_PROJECT", raising=False)
    monkeypatch.chdir(tmp_path / "program")  # below the project, as pulumi would find it
    assert constants.project_dir() == tmp_path
    assert "my-lab" in stacks.stack_names() and stacks.load("my-lab").dc_names == stacks.load("local").dc_names


def test_init_refuses_to_overwrite_a_changed_file_unless_forced(tmp_path):
    project.init(tmp_path)
    (tmp_path / "Pulumi.local.yaml").write_text("config: {}\n")
    with pytest.raises(project.ProjectExists, match="Pulumi.local.yaml"):
        project.init(tmp_path)
    assert (tmp_path / "Pulumi.local.yaml").read_text() == "config: {}\n"
    project.init(tmp_path, force=True)
    assert "dcdrill:" in (tmp_path / "Pulumi.local.yaml").read_text()


def test_outside_any_project_an_installed_dcdrill_says_how_to_make_one(tmp_path, monkeypatch):
    monkeypatch.setattr(constants, "IN_CHECKOUT", False)
    monkeypatch.delenv("DCDRILL_PROJECT", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(constants.NoProject, match="dcdrill init"):
        stacks.load("local")
    assert stacks.stack_names() == []


def _source_digest() -> str:
    """The checkout's files as the wheel is built from them: what the shared install is keyed by."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=SOURCE, capture_output=True, check=True
    ).stdout
    digest = hashlib.sha256()
    for name in sorted(filter(None, listed.split(b"\0"))):
        path = SOURCE / name.decode()
        if path.is_file() and not path.is_symlink():
            digest.update(name + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


@pytest.fixture(scope="module")
def installed():
    """A fresh virtualenv outside the checkout with the built wheel and the extras the CI recipes
    install (project.CI_EXTRAS), as their `pip install "$DCDRILL_PIP"` would put it there.
    Built once per checkout state and shared under a lock: `make test`'s two pytest processes
    (the lab's and the unit tests') would otherwise each build and install it."""
    shared = cache_dir() / "test-installed"
    shared.mkdir(parents=True, exist_ok=True)
    tmp = shared / _source_digest()
    with open(shared / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (tmp / "complete").exists():
            for old in shared.iterdir():  # an earlier checkout state's, surely no longer in use
                if old.is_dir() and time.time() - old.stat().st_mtime > 86400:
                    shutil.rmtree(old)
            _build_and_install(tmp)
            (tmp / "complete").touch()
    return next((tmp / "dist").glob("dcdrill-*.whl")), tmp / "venv" / "bin" / "dcdrill", tmp


def _build_and_install(tmp: Path) -> None:
    (tmp / "build-tmp").mkdir(parents=True)  # the build's temporary files, looked at below
    # As `make wheel` builds it: in this environment, whose pyspark compiles the kernels in.
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp / "dist"), str(SOURCE)],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TMPDIR": str(tmp / "build-tmp")},
    )
    wheel = next((tmp / "dist").glob("dcdrill-*.whl"))
    venv.create(tmp / "venv", with_pip=True)
    pip = tmp / "venv" / "bin" / "pip"
    subprocess.run(
        [
            str(pip),
            "install",
            "-q",
            "-c",
            str(SOURCE / "requirements.lock"),
            f"dcdrill[{project.CI_EXTRAS}] @ {wheel.as_uri()}",
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
    )


def _run(
    dcdrill: Path, *args: str, cwd: Path, timeout: int = 120, env: dict | None = None
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in (env or os.environ).items() if k not in ("PYTHONPATH", "DCDRILL_PROJECT", "VIRTUAL_ENV")}
    env["DCDRILL_CACHE"] = str(cache_dir())  # this machine's jars and Pulumi CLI
    env["DCDRILL_STATE"] = str(state_dir())  # and its lab state
    return subprocess.run([str(dcdrill), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.lab
def test_the_wheel_build_leaves_no_temporary_folder_behind(installed):
    """hatch_build.py compiles the kernels in a temporary folder and removes it once the wheel is
    written (every build left one in /tmp before)."""
    _, _, tmp = installed
    assert not list((tmp / "build-tmp").glob("dcdrill-wheel-kernels-*"))


@pytest.mark.lab
def test_the_wheel_carries_what_the_tool_needs_beyond_python(installed):
    wheel, _, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "dcdrill/shipped/site.yml",
        "dcdrill/shipped/roles/kafka_broker/tasks/main.yml",
        "dcdrill/shipped/examples/Pulumi.local.yaml",
        "dcdrill/shipped/ci/github-actions.yml",
        "dcdrill/chaos/experiments/kill-dc.json",
        "dcdrill/spark/jvm/Scan.java",
        "dcdrill/validation/jvm/ProducerBridge.java",  # the java client, compiled where the bundle is made
        "dcdrill/validation/jvm/log4j2.properties",
        "dcdrill/infra/toolchain/setup.sh",
        "dcdrill/infra/toolchain/kafka-pom.xml",
        "dcdrill/infra/lab/forwarder/main.go",
        "dcdrill/infra/lab/disk/main.go",
        "dcdrill/infra/lab/disk/go.sum",
        "dcdrill/infra/__main__.py",
        "dcdrill/record/ledger.py",
    ):
        assert needed in names, needed
    assert not any("__pycache__" in n or n.startswith(".cache") for n in names)
    # one top-level import package: nothing beside dcdrill/ but the distribution's metadata
    assert {n.split("/")[0] for n in names} == {"dcdrill", f"dcdrill-{PYPROJECT['project']['version']}.dist-info"}


@pytest.mark.lab
def test_installed_tool_inits_plans_and_drills_from_the_users_folder(installed, lab, tmp_path):
    """The issue's test: pip install <wheel>, dcdrill init, dcdrill plan --stack local; a drill
    from that folder on the lab, with the wheel's roles and experiments."""
    _, dcdrill, _ = installed
    users = tmp_path / "their-repo"
    users.mkdir()
    assert _run(dcdrill, "--version", cwd=users).stdout.strip() == f"dcdrill {PYPROJECT['project']['version']}"
    lost = _run(dcdrill, "plan", "--stack", "local", cwd=users)
    assert lost.returncode == 2 and "dcdrill init" in lost.stderr
    assert _run(dcdrill, "init", cwd=users).returncode == 0
    shim = (cache_dir() / "bin" / "pulumi-resource-pulumi-python").read_text()
    setup = _run(dcdrill, "setup", cwd=users, timeout=900)
    assert setup.returncode == 0, setup.stdout[-2000:] + setup.stderr[-2000:]
    assert (cache_dir() / "bin" / "pulumi-resource-pulumi-python").read_text() == shim  # the checkout's stays its own
    plan = _run(dcdrill, "plan", "--stack", "local", cwd=users)
    assert plan.returncode == 0 and "losing one DC" in plan.stdout, plan.stderr
    # CI's slow-link drill: the wheel's roles and experiments drill from the user's folder as any
    # experiment would, and the delay and the heal are checked as tests/chaos/test_drill_integration.py does.
    run = users / "runs/one"
    drill = _run(
        dcdrill,
        "drill",
        "--stack",
        "local",
        *SLOW_LINK,
        "--hold",
        "10",
        *TEST_RATE,
        "--run-dir",
        str(run),
        cwd=users,
        timeout=900,
    )
    assert drill.returncode == 0, drill.stdout[-3000:] + drill.stderr[-3000:]
    assert (run / "report/index.html").is_file() and (run / "report/junit.xml").is_file()
    check_slow_link_drill(run)


def test_from_the_wheel_init_the_recipes_install_and_check_every_aws_stack_with_no_route_to_aws(
    installed, aws_control, tmp_path
):
    """Issue 69's Done-when, no lab: `dcdrill init` in an empty folder, the recipe's install (the
    `installed` venv), then `drill --check` on each AWS stack with dummy credentials, the account
    read from moto's server on loopback and any other address behind a proxy that answers nothing."""
    _, dcdrill, _ = installed
    users = tmp_path / "their-repo"
    users.mkdir()
    assert _run(dcdrill, "init", cwd=users).returncode == 0
    recipe = (users / ".github/workflows/dcdrill.yml").read_text()
    assert '.venv/bin/pip install "$DCDRILL_PIP"' in recipe  # what the `installed` fixture did
    # The provider plugin's step reads pulumi_aws's version from that venv (item 1: it raised).
    step = next(line.strip() for line in recipe.splitlines() if line.strip().startswith("version=$("))
    step = step.replace(".venv/bin/python", str(dcdrill.parent / "python")) + '; echo "$version"'
    version = subprocess.run(["sh", "-c", step], capture_output=True, text=True, check=True).stdout
    assert re.fullmatch(r"\d+\.\d+\.\d+\n", version), version
    stacks = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in users.glob("Pulumi.aws-*.yaml"))
    assert {f"Pulumi.{s}.yaml" for s in stacks} == {p.name for p in SOURCE.glob("Pulumi.aws-*.yaml")}, stacks
    offline = {**aws_control, "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}
    offline["NO_PROXY"] = "127.0.0.1"  # moto's server; nothing else answers
    for name in stacks:
        res = _run(dcdrill, "drill", "--stack", name, "--experiment", "kill-dc", "--check", cwd=users, env=offline)
        said = res.stdout + res.stderr
        assert res.returncode == 0, (name, said)
        assert f"kill-dc can run on stack {name} (aws backend)" in said and "reading the account" in said, said
        # moto serves no EC2 quotas: that read is a warning in each region, and it is the only one.
        warnings = [line for line in res.stderr.splitlines() if "warning" in line]
        assert warnings and all("vCPU quota (L-1216C47A) could not be read" in w for w in warnings), res.stderr


def _system_jdk() -> Path:
    return Path(subprocess.check_output(["readlink", "-f", "/usr/bin/java"], text=True)).parents[1]


def test_the_installed_verifier_needs_a_java_runtime_and_nothing_of_setup(installed, tmp_path):
    """`dcdrill verify` from the wheel with an empty cache and no setup, on a Java runtime with no
    javac: the wheel's compiled kernels run, and Go, Maven and javac are never called."""
    from dcdrill.spark import java_runtime
    from tests import records

    wheel, dcdrill, _ = installed
    assert {"dcdrill/spark/dcdrill-kernel.jar", "dcdrill/spark/dcdrill-kernel.key"} <= set(
        zipfile.ZipFile(wheel).namelist()
    )
    record = records.write(
        tmp_path / "run",
        [records.p("p1", i, "ok", 0, i, 1000 + i) for i in range(3)],
        [records.a(0, i, "p1", i) for i in range(3)],
        [records.c(0, i, "p1", i) for i in range(3)],
    )
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("go", "mvn", "javac"):  # a call to any leaves a mark
        (tools / name).write_text(f"#!/bin/sh\ntouch {tmp_path}/called-{name}\nexit 97\n")
        (tools / name).chmod(0o755)
    jre = tmp_path / "jre"  # the JDK Spark would take, less its compiler: a Java runtime
    (jre / "bin").mkdir(parents=True)
    jdk = Path(java_runtime.java_home() or _system_jdk())
    for entry in jdk.iterdir():
        if entry.name != "bin":
            (jre / entry.name).symlink_to(entry)
    (jre / "bin" / "java").symlink_to(jdk / "bin" / "java")
    env = {
        "PATH": f"{tools}:/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "DCDRILL_CACHE": str(tmp_path / "empty-cache"),
        "DCDRILL_SPARK_JAVA_HOME": str(jre),
        "LANG": "C.UTF-8",
    }
    res = subprocess.run(
        [str(dcdrill), "verify", str(record)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0 and "verdict: PASS" in res.stdout, res.stdout[-2000:] + res.stderr[-2000:]
    assert "compiling" not in res.stderr
    assert (tmp_path / "empty-cache" / "spark-kernel" / "dcdrill-kernel.jar").is_file()
    assert not list(tmp_path.glob("called-*"))


def test_under_sudo_the_cache_is_the_invoking_users(monkeypatch, tmp_path):
    """`sudo dcdrill drill` resets HOME to root's: an installed dcdrill still finds the cache that
    `dcdrill setup` filled as the user (SUDO_USER's home)."""
    import pwd

    user = pwd.getpwuid(os.getuid())
    monkeypatch.setattr(constants, "IN_CHECKOUT", False)
    for var in ("DCDRILL_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "root-home"))
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setenv("SUDO_USER", user.pw_name)
    assert cache_dir() == (Path(user.pw_dir) / ".cache" / "dcdrill").resolve()
    monkeypatch.delenv("SUDO_USER")
    assert cache_dir() == (tmp_path / "root-home" / ".cache" / "dcdrill").resolve()


NOBODY = 65534


@pytest.mark.skipif(
    not os.environ.get("DCDRILL_SLOW_INSTALLS"),
    reason="a second install of pyspark, as another "
    "user (40 s with pip's cache warm, more without): DCDRILL_SLOW_INSTALLS=1 runs it",
)
def test_an_unprivileged_user_installs_the_wheel_and_verifies_with_a_jdk_only(tmp_path):
    """The issue's test, whole: the wheel, a fresh virtualenv made by another user (nobody) with the
    system's Python, no Go, no Maven, no cache, no root; `dcdrill verify` on a record passes."""
    import shutil

    from tests import records

    home = Path("/var/tmp") / f"dcdrill-nobody-{os.getpid()}"  # nobody reaches /var/tmp, not root's tmp
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(mode=0o755)
    try:
        wheels = home / "wheels"  # the wheel and its dependencies, from this machine's pip cache
        subprocess.run(
            [sys.executable, "-m", "build", "--wheel", "--outdir", str(wheels), str(SOURCE)],
            check=True,
            capture_output=True,
            timeout=600,
        )
        wheel = next(wheels.glob("dcdrill-*.whl"))
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "-q",
                "-w",
                str(wheels),
                "-c",
                str(SOURCE / "requirements.lock"),
                f"{wheel}[verify]",
            ],
            check=True,
            capture_output=True,
            timeout=900,
        )
        record = records.write(
            home / "run",
            [records.p("p1", i, "ok", 0, i, 1000 + i) for i in range(3)],
            [records.a(0, i, "p1", i) for i in range(3)],
            [records.c(0, i, "p1", i) for i in range(3)],
        )
        subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(home)], check=True)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
        as_nobody = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        for step in (
            ["/usr/bin/python3", "-m", "venv", str(home / "venv")],
            [
                str(home / "venv/bin/pip"),
                "install",
                "-q",
                "--no-index",
                "--find-links",
                str(wheels),
                f"{wheel}[verify]",
            ],
        ):
            done = subprocess.run(as_nobody + step, env=env, cwd=home, capture_output=True, text=True, timeout=900)
            assert done.returncode == 0, done.stderr[-2000:]
        res = subprocess.run(
            as_nobody + [str(home / "venv/bin/dcdrill"), "verify", str(record)],
            env=env,
            cwd=home,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert res.returncode == 0 and "verdict: PASS" in res.stdout, res.stdout[-2000:] + res.stderr[-2000:]
        assert (home / ".cache/dcdrill/spark-kernel/dcdrill-kernel.jar").is_file()  # nobody's own cache
    finally:
        shutil.rmtree(home, ignore_errors=True)
