"""Driving the Pulumi CLI: the user's own when `pulumi` is on PATH (with their login, or
PULUMI_BACKEND_URL), else the one `dcdrill setup` built from the Go module proxy (a local file
backend under the cache, no plugin downloads)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from dcdrill.infra import stack as stacks
from dcdrill.infra.constants import cache_dir, project_dir


class PulumiError(RuntimeError):
    pass


def executable() -> Path:
    """DCDRILL_PULUMI, else `pulumi` on PATH (the official release, which bundles the Python
    language host), else the CLI that setup built into the cache."""
    if os.environ.get("DCDRILL_PULUMI"):
        return Path(os.environ["DCDRILL_PULUMI"])
    found = shutil.which("pulumi")
    return Path(found) if found else cache_dir() / "bin" / "pulumi"


def is_built(exe: Path) -> bool:
    """Whether `exe` is setup's own build, which brings its own language host and state folder."""
    return exe.parent.resolve() == (cache_dir() / "bin").resolve()


def _logged_in(e: dict) -> bool:
    """`pulumi login` was run: its credentials name a current backend."""
    home = Path(e.get("PULUMI_HOME") or Path.home() / ".pulumi")
    try:
        return bool(json.loads((home / "credentials.json").read_text()).get("current"))
    except (OSError, ValueError):
        return False


def env(stack: str) -> dict:
    cache = cache_dir()
    e = dict(os.environ)
    e["DCDRILL_PYTHON"] = sys.executable  # what setup's language-host launchers run
    e["DCDRILL_PROJECT"] = str(project_dir())
    e["DCDRILL_STACK"] = stack  # the language host lists the plugins this stack's program needs
    python_bin = str(Path(sys.executable).parent)
    built = is_built(executable())
    if built:
        e["PATH"] = os.pathsep.join([str(cache / "bin"), python_bin, e.get("PATH", "")])
        e.setdefault("PULUMI_HOME", str(cache / "pulumi-home"))
        e["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] = "true"
    else:  # the user's CLI finds its own plugins; the program runs on this Python
        e["PATH"] = os.pathsep.join([python_bin, e.get("PATH", "")])
    if not e.get("PULUMI_BACKEND_URL") and (built or not _logged_in(e)):
        e["PULUMI_BACKEND_URL"] = f"file://{cache / 'pulumi-state'}"  # never Pulumi Cloud unasked
    e["PULUMI_SKIP_UPDATE_CHECK"] = "true"
    e.setdefault("PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK", "true")
    if "PULUMI_CONFIG_PASSPHRASE" not in e and "PULUMI_CONFIG_PASSPHRASE_FILE" not in e:
        passphrase = stacks.backend(stack).passphrase()
        if passphrase is None:
            raise PulumiError(f"stack {stack} keeps secrets beyond this machine: set PULUMI_CONFIG_PASSPHRASE")
        e["PULUMI_CONFIG_PASSPHRASE"] = passphrase
    return e


def installed() -> Path:
    """The CLI to run; PulumiError naming the fix when there is none."""
    exe = executable()
    if not exe.exists():
        raise PulumiError(f"no `pulumi` on PATH and {exe} is missing: run `dcdrill setup` (or `make setup`) first")
    return exe


def run(stack: str, *args: str, capture: bool = False) -> str:
    cmd = ["pulumi", *args, "--stack", stack, "--non-interactive"]
    exe = installed()
    res = subprocess.run([str(exe), *cmd[1:]], cwd=project_dir(), env=env(stack), text=True,
                         stdout=subprocess.PIPE if capture else None, stderr=subprocess.PIPE if capture else None)
    if res.returncode != 0:
        raise PulumiError(f"`{' '.join(cmd)}` failed ({res.returncode})" + (f":\n{res.stderr}" if capture else ""))
    return res.stdout or ""


def ensure_stack(stack: str) -> None:
    exe = str(installed())
    have = subprocess.run([exe, "stack", "ls", "--json"], cwd=project_dir(), env=env(stack),
                          capture_output=True, text=True)
    names = [s["name"] for s in json.loads(have.stdout or "[]")] if have.returncode == 0 else []
    if stack not in names:
        made = subprocess.run([exe, "stack", "init", stack, "--secrets-provider", "passphrase", "--non-interactive"],
                              cwd=project_dir(), env=env(stack), capture_output=True, text=True)
        if made.returncode != 0:
            raise PulumiError(f"`pulumi stack init {stack}` in {project_dir()} failed: "
                              f"{(made.stderr or have.stderr).strip()}")


def up(stack: str, progress: bool = False) -> None:
    """`pulumi up`; with `progress`, Pulumi's own line per resource as it goes (a lab's first up
    takes a minute or more), else only its summary."""
    ensure_stack(stack)
    run(stack, "up", "--yes", "--skip-preview", "--suppress-outputs", *(() if progress else ("--suppress-progress",)))


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
