"""Driving the Pulumi CLI that `make setup` built: local file backend, no plugin downloads."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from infra import stack as stacks
from infra.constants import ROOT, cache_dir


class PulumiError(RuntimeError):
    pass


def env(stack: str) -> dict:
    cache = cache_dir()
    e = dict(os.environ)
    e["PATH"] = os.pathsep.join([str(cache / "bin"), str(Path(sys.executable).parent), e.get("PATH", "")])
    e.setdefault("PULUMI_HOME", str(cache / "pulumi-home"))
    e.setdefault("PULUMI_BACKEND_URL", f"file://{cache / 'pulumi-state'}")
    e["PULUMI_SKIP_UPDATE_CHECK"] = "true"
    e["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] = "true"
    e.setdefault("PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK", "true")
    if "PULUMI_CONFIG_PASSPHRASE" not in e and "PULUMI_CONFIG_PASSPHRASE_FILE" not in e:
        passphrase = stacks.backend(stack).passphrase()
        if passphrase is None:
            raise PulumiError(f"stack {stack} keeps secrets beyond this machine: set PULUMI_CONFIG_PASSPHRASE")
        e["PULUMI_CONFIG_PASSPHRASE"] = passphrase
    return e


def run(stack: str, *args: str, capture: bool = False) -> str:
    cmd = ["pulumi", *args, "--stack", stack, "--non-interactive"]
    exe = cache_dir() / "bin" / "pulumi"
    if not exe.exists():
        raise PulumiError(f"{exe} is missing: run `make setup` first")
    res = subprocess.run([str(exe), *cmd[1:]], cwd=ROOT, env=env(stack), text=True,
                         stdout=subprocess.PIPE if capture else None, stderr=subprocess.PIPE if capture else None)
    if res.returncode != 0:
        raise PulumiError(f"`{' '.join(cmd)}` failed ({res.returncode})" + (f":\n{res.stderr}" if capture else ""))
    return res.stdout or ""


def ensure_stack(stack: str) -> None:
    exe = str(cache_dir() / "bin" / "pulumi")
    have = subprocess.run([exe, "stack", "ls", "--json"], cwd=ROOT, env=env(stack),
                          capture_output=True, text=True)
    names = [s["name"] for s in json.loads(have.stdout or "[]")] if have.returncode == 0 else []
    if stack not in names:
        subprocess.run([exe, "stack", "init", stack, "--secrets-provider", "passphrase", "--non-interactive"],
                       cwd=ROOT, env=env(stack), check=True, capture_output=True, text=True)


def up(stack: str) -> None:
    ensure_stack(stack)
    run(stack, "up", "--yes", "--skip-preview", "--suppress-progress", "--suppress-outputs")


def destroy(stack: str) -> None:
    ensure_stack(stack)
    run(stack, "destroy", "--yes", "--skip-preview", "--suppress-progress")


def refresh(stack: str) -> None:
    ensure_stack(stack)
    run(stack, "refresh", "--yes", "--skip-preview", "--suppress-progress")


def outputs(stack: str) -> dict:
    ensure_stack(stack)
    return json.loads(run(stack, "stack", "output", "--json", "--show-secrets", capture=True) or "{}")


def resource_count(stack: str) -> int:
    ensure_stack(stack)
    state = json.loads(run(stack, "stack", "export", capture=True))
    return len(state.get("deployment", {}).get("resources") or [])
