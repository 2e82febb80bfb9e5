"""The CI recipes users copy (docs/ci/): the GitHub Actions workflow passes actionlint (built by
`make setup` from the Go module proxy); the GitLab CI job is checked for what the recipe
promises (GitLab's own linter needs a GitLab server): it runs the drill, keeps the records
whatever happened, and publishes junit.xml."""

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from dcdrill.infra import constants
from dcdrill.infra.constants import STATE_PATHS, TOOL_PATHS, cache_dir, state_dir
from tests import ROOT

RECIPES = ROOT / "docs" / "ci"


def test_the_github_workflow_passes_actionlint():
    res = subprocess.run(
        [str(cache_dir() / "bin" / "actionlint"), "-no-color", str(RECIPES / "github-actions.yml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_actionlint_fails_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text((RECIPES / "github-actions.yml").read_text().replace("runs-on: ubuntu-24.04", "runs-on: 5"))
    res = subprocess.run(
        [str(cache_dir() / "bin" / "actionlint"), "-no-color", str(broken)], capture_output=True, text=True, timeout=120
    )
    assert res.returncode != 0


def test_the_github_workflow_publishes_what_a_drill_leaves():
    wf = yaml.safe_load((RECIPES / "github-actions.yml").read_text())
    steps = wf["jobs"]["drill"]["steps"]
    drill = next(s for s in steps if s.get("name") == "Drill")
    assert "dcdrill drill --stack" in drill["run"] and "if" not in drill  # its exit code fails the job
    kept = [s for s in steps if s.get("if") == "always()"]
    assert any("junit.xml" in str(s.get("with", {}).get("report_paths")) for s in kept)
    paths = next(s["with"]["path"] for s in kept if s.get("uses", "").startswith("actions/upload-artifact"))
    assert all(p in paths for p in ("report/", "journal.json", "chaos.log"))


def test_the_gitlab_job_runs_the_drill_and_keeps_its_records():
    job = yaml.safe_load((RECIPES / "gitlab-ci.yml").read_text())["dcdrill"]
    assert any("dcdrill drill --stack" in line for line in job["script"])
    art = job["artifacts"]
    assert art["when"] == "always" and art["reports"]["junit"].endswith("report/junit.xml")
    assert all(any(p in path for path in art["paths"]) for p in ("report/", "journal.json", "chaos.log"))


def _go_mod_version() -> tuple[int, ...]:
    lines = (ROOT / "infra/toolchain/pulumi-go/go.mod").read_text().splitlines()
    line = next(line for line in lines if line.startswith("go "))
    return tuple(int(x) for x in line.split()[1].split("."))


def test_the_github_workflow_keeps_path_under_sudo_builds_with_a_new_enough_go_and_caches_setup():
    wf = yaml.safe_load((RECIPES / "github-actions.yml").read_text())
    steps = wf["jobs"]["drill"]["steps"]
    runs = [
        line for s in steps for line in str(s.get("run", "")).splitlines() if "sudo" in line and "bin/dcdrill" in line
    ]
    assert runs and all('sudo env "PATH=$PATH"' in line for line in runs), runs  # secure_path drops --preserve-env=PATH
    go = next(s["with"]["go-version"] for s in steps if s.get("uses", "").startswith("actions/setup-go"))
    assert tuple(int(x) for x in go.split(".")) >= _go_mod_version()[:2]
    assert _github_cache_paths() == [f"~/.cache/dcdrill/{p}" for p in TOOL_PATHS]


def _github_cache_paths() -> list[str]:
    steps = yaml.safe_load((RECIPES / "github-actions.yml").read_text())["jobs"]["drill"]["steps"]
    return next(s for s in steps if s.get("uses", "").startswith("actions/cache"))["with"]["path"].split()


def test_the_recipes_cache_the_tools_and_no_folder_of_a_stacks_state(monkeypatch, tmp_path):
    """What the recipes cache is exactly TOOL_PATHS, and the state folder the job gets lies under none
    of it: GitLab's DCDRILL_CACHE has its state beside it, an installed dcdrill under ~/.local/state."""
    job = yaml.safe_load((RECIPES / "gitlab-ci.yml").read_text())
    gitlab = job["dcdrill"]["cache"]["paths"]
    assert gitlab == [f".dcdrill-cache/{p}" for p in TOOL_PATHS]
    assert not [(t, s) for t in TOOL_PATHS for s in STATE_PATHS if s == t or s.startswith(t + "/") or t.startswith(s)]
    project = tmp_path / "project"
    monkeypatch.setenv("DCDRILL_CACHE", job["variables"]["DCDRILL_CACHE"].replace("$CI_PROJECT_DIR", str(project)))
    assert state_dir() == project / ".dcdrill-cache-state"
    assert not [p for p in gitlab if (project / p).is_relative_to(state_dir())]
    monkeypatch.delenv("DCDRILL_CACHE")
    monkeypatch.setattr(constants, "IN_CHECKOUT", False)
    monkeypatch.setenv("HOME", str(tmp_path / "runner"))
    for var in ("DCDRILL_STATE", "XDG_CACHE_HOME", "XDG_STATE_HOME", "SUDO_USER"):
        monkeypatch.delenv(var, raising=False)
    cached = [Path(p.replace("~", str(tmp_path / "runner"))) for p in _github_cache_paths()]
    assert state_dir() == tmp_path / "runner" / ".local" / "state" / "dcdrill"
    assert all(p.is_relative_to(cache_dir()) and not p.is_relative_to(state_dir()) for p in cached)


def test_the_gitlab_job_has_a_new_enough_go_and_caches_setup():
    job = yaml.safe_load((RECIPES / "gitlab-ci.yml").read_text())
    image = job["dcdrill"]["image"]
    assert image.startswith("golang:") and not any("golang" in line for line in job["dcdrill"]["before_script"])
    assert tuple(int(x) for x in image.split(":")[1].split("-")[0].split(".")) >= _go_mod_version()[:2]
    assert job["variables"]["DCDRILL_CACHE"] == "$CI_PROJECT_DIR/.dcdrill-cache"
    assert job["dcdrill"]["cache"]["paths"][0].startswith(".dcdrill-cache/")


@pytest.mark.parametrize(
    "direct,expected",
    [
        (
            {"url": "https://github.com/acme/dcdrill.git", "vcs_info": {"vcs": "git", "commit_id": "0a1b2c3"}},
            "dcdrill[aws,verify] @ git+https://github.com/acme/dcdrill.git@0a1b2c3",
        ),
        (
            {"url": "https://example.org/dist/dcdrill-0.1.0-py3-none-any.whl", "archive_info": {}},
            "dcdrill[aws,verify] @ https://example.org/dist/dcdrill-0.1.0-py3-none-any.whl",
        ),
        ({"url": "file:///home/me/dist/dcdrill-0.1.0-py3-none-any.whl", "archive_info": {}}, None),
        ({"url": "file:///home/me/dcdrill", "dir_info": {"editable": True}}, None),
        (None, None),
    ],
)
def test_init_pins_what_ci_installs_to_where_this_dcdrill_came_from(monkeypatch, tmp_path, direct, expected):
    """PEP 610: a git commit or a wheel's URL is pinned into the recipe; a local path, which a
    runner cannot reach, leaves DCDRILL_PIP empty, and the recipe stops naming it."""
    from importlib import metadata

    from dcdrill import project

    class Dist:
        def read_text(self, name):
            return json.dumps(direct) if direct and name == "direct_url.json" else None

    monkeypatch.setattr(metadata, "distribution", lambda name: Dist())
    assert project.install_spec() == expected
    for ci, (_, where) in project.CI_TARGETS.items():
        recipe = next(f.text for f in project.scaffold(tmp_path, ci) if f.path == where)
        assert (f'DCDRILL_PIP: "{expected}"' if expected else project.PIP_LINE) in recipe
        assert "set DCDRILL_PIP" in recipe  # the install step's stop when it is empty


def test_every_action_is_pinned_by_its_commit():
    import re

    uses = re.findall(r"uses:\s*(\S+)", (RECIPES / "github-actions.yml").read_text())
    assert uses and all(re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", u) for u in uses), uses


def test_the_github_workflow_drills_an_aws_stack_with_only_an_oidc_role():
    """issue 40: from a hosted runner with no route into the VPC: the role comes from GitHub's OIDC
    token (no stored keys), the drill runs without sudo (which would drop the credentials), and
    the stack's state lives in the user's backend, not on the runner."""
    wf = yaml.safe_load((RECIPES / "github-actions.yml").read_text())
    assert wf["permissions"]["id-token"] == "write"
    job = wf["jobs"]["drill"]
    steps = job["steps"]
    creds = next(s for s in steps if s.get("uses", "").startswith("aws-actions/configure-aws-credentials@"))
    assert creds["if"] == "startsWith(env.STACK, 'aws-')" and "vars.DCDRILL_AWS_ROLE" in creds["with"]["role-to-assume"]
    assert not any(k in creds["with"] for k in ("aws-access-key-id", "aws-secret-access-key"))
    drill = next(s for s in steps if s.get("name") == "Drill")["run"]
    aws_branch = next(line for line in drill.splitlines() if line.strip().startswith("aws-*)"))
    assert "sudo" not in aws_branch and "dcdrill drill --stack" in aws_branch
    assert "DCDRILL_PULUMI_BACKEND" in job["env"]["PULUMI_BACKEND_URL"]
    down = next(s for s in steps if s.get("name", "").startswith("Tear the stack down"))
    assert down["if"] == "always()" and '[ "$KEEP_UP" = true ] ||' in down["run"]
    assert steps.index(creds) < steps.index(next(s for s in steps if s.get("name") == "Drill"))


def test_the_github_workflow_refuses_an_aws_stack_whose_state_would_go_with_the_runner(tmp_path):
    """issue 69 item 4: an AWS stack's Pulumi state in a backend that outlives the job, and
    credentials that outlive the job too, so its teardown can run."""
    job = yaml.safe_load((RECIPES / "github-actions.yml").read_text())["jobs"]["drill"]
    steps = job["steps"]
    [check] = [s for s in steps if s.get("name", "").startswith("A durable Pulumi backend")]
    assert check["if"] == "startsWith(env.STACK, 'aws-')"
    assert steps.index(check) < steps.index(next(s for s in steps if s.get("name") == "Drill"))
    for url, code in [("", 2), ("file:///home/runner/.pulumi", 2), ("s3://", 2), ("s3://acme-state", 0)]:
        res = subprocess.run(
            ["bash", "-c", check["run"]], env={"PULUMI_BACKEND_URL": url}, capture_output=True, text=True
        )
        assert res.returncode == code, (url, res.stdout)
        assert code == 0 or "DCDRILL_PULUMI_BACKEND" in res.stdout
    creds = next(s for s in steps if s.get("uses", "").startswith("aws-actions/configure-aws-credentials@"))
    assert creds["with"]["role-duration-seconds"] > job["timeout-minutes"] * 60


# What a hosted Ubuntu runner's sudo does (its sudoers): PATH becomes secure_path, whatever the
# caller's; HOME becomes root's; little else of the environment survives.
SECURE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/snap/bin"
STUB_SUDO = f"""#!/bin/sh
case "$1" in --preserve-env*) shift ;; esac  # kept or not, PATH is secure_path's
exec env -i PATH={SECURE_PATH} HOME="$DRY_ROOT_HOME" DRY_LOG="$DRY_LOG" DRY_ROOT_HOME="$DRY_ROOT_HOME" \\
  SUDO_USER=runner "$@"
"""
# python -m venv .venv makes a virtualenv whose pip and dcdrill only say how they were run.
STUB_PYTHON = """#!/bin/sh
[ "$1 $2" = "-m venv" ] || { echo 3.11; exit 0; }
mkdir -p "$3/bin"
for tool in pip dcdrill; do
  cat > "$3/bin/$tool" <<'TOOL'
#!/bin/sh
echo "$(basename "$0") $* | root=${SUDO_USER:+yes} java=$(command -v java) go=$(command -v go) \\
JAVA_HOME=$JAVA_HOME" >> "$DRY_LOG"
TOOL
  chmod +x "$3/bin/$tool"
done
printf '#!/bin/sh\\necho 7.0.0\\n' > "$3/bin/python"; chmod +x "$3/bin/python"
"""


def _dry_run_github(tmp_path, stack: str, workflow: str) -> list[str]:
    """Each `run:` step of the workflow, in order, as the hosted runner runs it (bash -e, the
    setup-* actions' tool folders on PATH, its sudo), with stand-ins for python's venv, pip,
    dcdrill and pulumi that log how they were run. The lines they logged."""
    wf = yaml.safe_load(workflow)
    home, root_home, work, bins = (tmp_path / n for n in ("home", "root", "work", "bins"))
    tools = {
        "python": tmp_path / "toolcache/Python/3.11/x64/bin",
        "go": tmp_path / "toolcache/go/1.26/x64/bin",
        "java": tmp_path / "toolcache/Java_Temurin/21/x64/bin",
    }
    for d in (home, root_home, work, bins, *tools.values()):
        d.mkdir(parents=True, exist_ok=True)
    for path, text in (
        (bins / "sudo", STUB_SUDO),
        (tools["python"] / "python", STUB_PYTHON),
        (tools["go"] / "go", "#!/bin/sh\n"),
        (tools["java"] / "java", "#!/bin/sh\n"),
        (home / ".cache/dcdrill/bin/pulumi", '#!/bin/sh\necho "pulumi $*" >> "$DRY_LOG"\n'),
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o755)
    log = tmp_path / "log"
    log.touch()
    env = {
        "PATH": ":".join([str(bins), *map(str, tools.values()), "/usr/bin:/bin"]),
        "HOME": str(home),
        "JAVA_HOME": str(tools["java"].parent),
        "DRY_LOG": str(log),
        "DRY_ROOT_HOME": str(root_home),
        "STACK": stack,
        "EXPERIMENT": "kill-dc",
        "REPEAT": "1",
        "KEEP_UP": "false",
        "DCDRILL_PIP": "dcdrill[aws,verify] @ git+https://github.com/acme/dcdrill.git@0a1b2c3",
        # The job's env, from the repository variable DCDRILL_PULUMI_BACKEND (AWS stacks only)
        "PULUMI_BACKEND_URL": "s3://acme-state" if stack.startswith("aws-") else "",
    }
    (work / "runs").mkdir()
    for step in wf["jobs"]["drill"]["steps"]:
        if "run" not in step or (
            step.get("if", "").startswith("startsWith(env.STACK, 'aws-')") and not stack.startswith("aws-")
        ):
            continue
        ran = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert ran.returncode == 0, (step.get("name"), ran.stderr)
    return log.read_text().splitlines()


def _check_github(tmp_path, stack: str, workflow: str) -> None:
    lines = _dry_run_github(tmp_path, stack, workflow)
    dcdrill = [line for line in lines if line.startswith("dcdrill ")]
    assert [line.split(" |")[0] for line in dcdrill] == [
        "dcdrill setup",
        f"dcdrill drill --stack {stack} --experiment kill-dc --repeat 1",
        f"dcdrill lab down --stack {stack}",
    ]
    java = str(tmp_path / "toolcache/Java_Temurin/21/x64/bin/java")
    setup = dcdrill[0]
    assert "root=yes" in setup and f"go={tmp_path}/toolcache/go/1.26/x64/bin/go" in setup and f"java={java}" in setup
    for line in dcdrill[1:]:
        assert (f"java={java}" in line) and (("root=yes" in line) == (not stack.startswith("aws-"))), line
    assert all("JAVA_HOME=" + str(tmp_path / "toolcache/Java_Temurin/21/x64") in line for line in dcdrill)
    assert any(line.startswith("pulumi plugin install resource aws v7.0.0") for line in lines) == stack.startswith(
        "aws-"
    )


@pytest.mark.parametrize("stack", ["local", "aws-3az-tiebreaker"])
def test_each_github_step_runs_under_the_hosted_runners_path_and_sudo(tmp_path, stack):
    """dcdrill setup finds Go and Java under sudo (secure_path would hide setup-go's and
    setup-java's), the lab's drill runs as root and an AWS stack's as the runner, who keeps its
    credentials."""
    _check_github(tmp_path, stack, (RECIPES / "github-actions.yml").read_text())


def test_the_dry_run_catches_sudo_dropping_path(tmp_path):
    """`sudo --preserve-env=PATH` (what the recipe once said) keeps no PATH on the runner."""
    broken = (
        (RECIPES / "github-actions.yml")
        .read_text()
        .replace(
            'sudo env "PATH=$PATH" "JAVA_HOME=$JAVA_HOME" .venv/bin/dcdrill setup',
            "sudo --preserve-env=PATH .venv/bin/dcdrill setup",
        )
    )
    with pytest.raises(AssertionError, match="go="):
        _check_github(tmp_path, "local", broken)


def test_each_gitlab_line_runs_in_the_image_it_names(tmp_path):
    """before_script, script and after_script as the job runs them (root, bash -e, the golang
    image's PATH with its Go), with stand-ins for apt-get, the venv, pip and dcdrill: setup finds
    that Go, and the drill and the teardown run on the stack the variables name."""
    job = yaml.safe_load((RECIPES / "gitlab-ci.yml").read_text())
    image_go = tmp_path / "usr/local/go/bin"  # golang images: GOPATH/bin, then the toolchain
    bins = tmp_path / "bins"
    for d in (image_go, bins, tmp_path / "work"):
        d.mkdir(parents=True)
    for path, text in (
        (image_go / "go", "#!/bin/sh\n"),
        (bins / "apt-get", "#!/bin/sh\n"),
        (bins / "python3", STUB_PYTHON),
    ):
        path.write_text(text)
        path.chmod(0o755)
    log = tmp_path / "log"
    log.touch()
    variables = {k: v.replace("$CI_PROJECT_DIR", str(tmp_path / "work")) for k, v in job["variables"].items()}
    env = {
        **variables,
        "DCDRILL_PIP": "dcdrill[aws,verify] @ git+https://github.com/acme/dcdrill.git@0a1b2c3",
        "PATH": f"{bins}:{image_go}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "DRY_LOG": str(log),
        "CI_PROJECT_DIR": str(tmp_path / "work"),
    }
    d = job["dcdrill"]
    for line in d["before_script"] + d["script"] + d["after_script"]:
        ran = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", line],
            cwd=tmp_path / "work",
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert ran.returncode == 0, (line, ran.stderr)
    runs = [line.split(" |")[0] for line in log.read_text().splitlines() if line.startswith("dcdrill ")]
    assert runs == [
        "dcdrill setup",
        "dcdrill drill --stack local --experiment kill-dc --repeat 1",
        "dcdrill lab down --stack local",
    ]
    assert f"go={image_go}/go" in next(
        line for line in log.read_text().splitlines() if line.startswith("dcdrill setup")
    )
