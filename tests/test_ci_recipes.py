"""The CI recipes users copy (docs/ci/): the GitHub Actions workflow passes actionlint (built by
`make setup` from the Go module proxy); the GitLab CI job is checked for what the recipe
promises (GitLab's own linter needs a GitLab server): it runs the drill, keeps the records
whatever happened, and publishes junit.xml."""
import json
import subprocess

import pytest
import yaml

from dcdrill.infra.constants import cache_dir
from tests import ROOT

RECIPES = ROOT / "docs" / "ci"


def test_the_github_workflow_passes_actionlint():
    res = subprocess.run([str(cache_dir() / "bin" / "actionlint"), "-no-color", str(RECIPES / "github-actions.yml")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def test_actionlint_fails_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text((RECIPES / "github-actions.yml").read_text().replace("runs-on: ubuntu-24.04", "runs-on: 5"))
    res = subprocess.run([str(cache_dir() / "bin" / "actionlint"), "-no-color", str(broken)],
                         capture_output=True, text=True, timeout=120)
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
    line = next(l for l in (ROOT / "infra/toolchain/pulumi-go/go.mod").read_text().splitlines() if l.startswith("go "))
    return tuple(int(x) for x in line.split()[1].split("."))


def test_the_github_workflow_keeps_path_under_sudo_builds_with_a_new_enough_go_and_caches_setup():
    wf = yaml.safe_load((RECIPES / "github-actions.yml").read_text())
    steps = wf["jobs"]["drill"]["steps"]
    runs = [line for s in steps for line in str(s.get("run", "")).splitlines() if "sudo" in line and "bin/dcdrill" in line]
    assert runs and all('sudo env "PATH=$PATH"' in line for line in runs), runs  # secure_path drops --preserve-env=PATH
    go = next(s["with"]["go-version"] for s in steps if s.get("uses", "").startswith("actions/setup-go"))
    assert tuple(int(x) for x in go.split(".")) >= _go_mod_version()[:2]
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache"))
    assert cache["with"]["path"] == "~/.cache/dcdrill"


def test_the_gitlab_job_has_a_new_enough_go_and_caches_setup():
    job = yaml.safe_load((RECIPES / "gitlab-ci.yml").read_text())
    image = job["dcdrill"]["image"]
    assert image.startswith("golang:") and not any("golang" in line for line in job["dcdrill"]["before_script"])
    assert tuple(int(x) for x in image.split(":")[1].split("-")[0].split(".")) >= _go_mod_version()[:2]
    assert job["variables"]["DCDRILL_CACHE"] == "$CI_PROJECT_DIR/.dcdrill-cache"
    assert ".dcdrill-cache/" in job["dcdrill"]["cache"]["paths"]


@pytest.mark.parametrize("direct,expected", [
    ({"url": "https://github.com/acme/dcdrill.git", "vcs_info": {"vcs": "git", "commit_id": "0a1b2c3"}},
     "dcdrill[verify] @ git+https://github.com/acme/dcdrill.git@0a1b2c3"),
    ({"url": "https://example.org/dist/dcdrill-0.1.0-py3-none-any.whl", "archive_info": {}},
     "dcdrill[verify] @ https://example.org/dist/dcdrill-0.1.0-py3-none-any.whl"),
    ({"url": "file:///home/me/dist/dcdrill-0.1.0-py3-none-any.whl", "archive_info": {}}, None),
    ({"url": "file:///home/me/dcdrill", "dir_info": {"editable": True}}, None),
    (None, None),
])
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
