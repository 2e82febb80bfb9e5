"""A dcdrill project in the user's own repository: what `dcdrill init` writes there, and what
`dcdrill setup` installs for it.

A project is a folder with a Pulumi.yaml whose program is dcdrill's (a two-line `program/`
that runs the installed `dcdrill.infra` package), its stacks (Pulumi.<stack>.yaml) and a CI
recipe. infra.constants.project_dir() finds it from the current folder, as `pulumi` does.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from dcdrill.infra import schema
from dcdrill.infra.constants import IN_CHECKOUT, PACKAGE, PROJECT_FILE, SHIPPED, cache_dir

# Where the shipped files sit: a checkout keeps them where it uses them; a wheel under SHIPPED.
EXAMPLES = SHIPPED if IN_CHECKOUT else SHIPPED / "examples"
CI_RECIPES = SHIPPED / "docs" / "ci" if IN_CHECKOUT else SHIPPED / "ci"
CI_TARGETS = {
    "github": ("github-actions.yml", ".github/workflows/dcdrill.yml"),
    "gitlab": ("gitlab-ci.yml", "ci/dcdrill.gitlab-ci.yml"),
}  # include: it from .gitlab-ci.yml

PROGRAM = '''"""This project's Pulumi program is dcdrill's own, installed with it: it reads the dcdrill:
settings of Pulumi.<stack>.yaml and builds the lab or the AWS stack they describe."""
import runpy

runpy.run_module("dcdrill.infra", run_name="__main__")
'''


# Drill records, and what a plain `chaos run` / `chaos discover` leaves in the folder it runs in.
GITIGNORED = ("runs/", "__pycache__/", "chaostoolkit.log", "discovery.json", "journal.json")


class ProjectExists(ValueError):
    """A file init would write is there already, with other content (exit 2)."""


@dataclass(frozen=True)
class Scaffold:
    """One file of a new project: where it goes (relative to the project) and what it holds."""

    path: str
    text: str


def _pulumi_yaml(target: Path) -> str:
    """The project file: dcdrill's name (the machine has one lab, and its state under the cache is
    one, whichever project brought it up), `main: program/`, and this Python's virtualenv when it
    lives inside the project (the official language host uses it for a `pulumi up` by hand;
    dcdrill itself runs the program in its own process, through the Automation API)."""
    venv = Path(sys.prefix).resolve()
    lines = [
        "name: dcdrill",
        'description: "Multi-datacenter Kafka drills (dcdrill); stacks are Pulumi.<stack>.yaml beside this file."',
        "runtime:",
        "  name: python",
    ]
    if sys.prefix != sys.base_prefix and venv.is_relative_to(target.resolve()):
        lines += ["  options:", f"    virtualenv: {venv.relative_to(target.resolve())}"]
    return "\n".join([*lines, "main: program/", ""])


# The recipes' line that says what CI installs; init fills it with where this dcdrill came from.
PIP_LINE = 'DCDRILL_PIP: ""'


CI_EXTRAS = "aws,verify"  # what the CI recipes install: a lab stack and an AWS one alike


def install_spec(extras: str = CI_EXTRAS) -> str | None:
    """What pip installs to get this very dcdrill on another machine (with the extras the CI
    recipes need, for a lab stack and an AWS one alike), from how it was installed here (PEP
    610's direct_url.json): a git URL at its commit, or an archive's URL. None when it
    came from a local path (a wheel file, a checkout), which a CI runner cannot reach, or when
    pip left no record (then `dcdrill[<extras>]==<version>` from an index is the guess, not a fact)."""
    from importlib import metadata

    try:
        direct = json.loads(metadata.distribution("dcdrill").read_text("direct_url.json") or "null")
    except metadata.PackageNotFoundError:
        return None
    if not direct:
        return None
    url = direct.get("url", "")
    if "vcs_info" in direct:
        vcs = direct["vcs_info"]
        return f"dcdrill[{extras}] @ {vcs['vcs']}+{url}@{vcs['commit_id']}"
    if "archive_info" in direct and url.startswith(("https://", "http://")):
        return f"dcdrill[{extras}] @ {url}"
    return None


def _recipe(text: str, spec: str | None) -> str:
    return text.replace(PIP_LINE, f'DCDRILL_PIP: "{spec}"', 1) if spec else text


def scaffold(target: Path, ci: str = "github") -> list[Scaffold]:
    """Every file of a new project, in the order init writes them."""
    files = [Scaffold(PROJECT_FILE, _pulumi_yaml(target)), Scaffold("program/__main__.py", PROGRAM)]
    # No salt: Pulumi makes the user's own at their first `stack init`, from their passphrase.
    files += [
        Scaffold(p.name, re.sub(r"(?m)^encryptionsalt:.*\n?", "", p.read_text()))
        for p in sorted(EXAMPLES.glob("Pulumi.*.yaml"))
    ]
    recipe, where = CI_TARGETS[ci]
    files.append(Scaffold(where, _recipe((CI_RECIPES / recipe).read_text(), install_spec())))
    # The stacks name it for editors (`# yaml-language-server: $schema=docs/stack.schema.json`).
    files.append(Scaffold("docs/stack.schema.json", json.dumps(schema.json_schema(), indent=2, sort_keys=True) + "\n"))
    files.append(Scaffold(".gitignore", "".join(f"{p}\n" for p in GITIGNORED)))
    return files


def init(target: Path, ci: str = "github", force: bool = False) -> list[Path]:
    """Write a new project into `target`. A file already there with the same text is kept; one
    with other text stops init before anything is written, unless `force`."""
    files = scaffold(target, ci)
    clashes = [f.path for f in files if (target / f.path).exists() and (target / f.path).read_text() != f.text]
    if clashes and not force:
        raise ProjectExists(
            f"{target.resolve()}: {', '.join(clashes)} already there with other content (--force overwrites them)"
        )
    written = []
    for f in files:
        path = target / f.path
        if path.exists() and path.read_text() == f.text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f.text)
        written.append(path)
    return written


def setup() -> int:
    """Install what the lab and the verifier need (apt packages, Kafka jars from Maven Central, the
    Pulumi CLI unless one is on PATH, the verifier's kernels): infra/toolchain/setup.sh, on this
    Python. Idempotent; its exit code."""
    env = {**os.environ, "DCDRILL_PYTHON": sys.executable, "DCDRILL_CACHE": str(cache_dir())}
    return subprocess.run(["bash", str(PACKAGE / "infra" / "toolchain" / "setup.sh")], env=env).returncode
