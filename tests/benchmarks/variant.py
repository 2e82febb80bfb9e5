"""A benchmark's own project: `dcdrill init` into a temporary folder, with one stack's file copied
in and edited, so a variant differs from the shipped stack in the keys the edit sets only. Point
DCDRILL_PROJECT at the folder to drill it."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import yaml

from dcdrill import project
from dcdrill.infra.constants import project_dir


def project_with(stack: str, prefix: str, edit: Callable[[dict], None]) -> Path:
    """The new project's folder; `edit` changes the stack file's `config` mapping in place."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    project.init(folder, force=True)
    doc = yaml.safe_load((project_dir() / f"Pulumi.{stack}.yaml").read_text())
    edit(doc["config"])
    (folder / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return folder
