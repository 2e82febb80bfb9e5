"""Driving Pulumi: the user's own CLI when `pulumi` is on PATH (with their login, or
PULUMI_BACKEND_URL), else the one `dcdrill setup` built from the Go module proxy (a local file
backend under the cache, no plugin downloads).

What runs the program (`up`, `preview`, `refresh`, `destroy`) goes through Pulumi's Automation
API: the project's `main:` runs in this process and the CLI reaches it with `--client`, so no
language host is involved. The proxy here serves no `pulumi-language-python`, so the CLI that
setup builds has none; a user's own CLI brings one for `pulumi up` by hand. The rest (stack
init, config, outputs, export) are plain CLI commands.
"""

from __future__ import annotations

import json
import os
import runpy
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from dcdrill.infra import stack as stacks
from dcdrill.infra.constants import cache_dir, project_dir, state_dir


class PulumiError(RuntimeError):
    pass


class RemoteStateRefused(ValueError):
    """A lab stack's state would leave this machine, unasked (exit 2)."""


def executable() -> Path:
    """DCDRILL_PULUMI, else `pulumi` on PATH (the official release, which bundles the Python
    language host), else the CLI that setup built into the cache."""
    if os.environ.get("DCDRILL_PULUMI"):
        return Path(os.environ["DCDRILL_PULUMI"])
    found = shutil.which("pulumi")
    return Path(found) if found else cache_dir() / "bin" / "pulumi"


def is_built(exe: Path) -> bool:
    """Whether `exe` is setup's own build, which keeps its plugins and state under the cache."""
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
    e["DCDRILL_PYTHON"] = sys.executable  # what setup's dynamic-provider launcher runs
    e["DCDRILL_PROJECT"] = str(project_dir())
    python_bin = str(Path(sys.executable).parent)
    built = is_built(executable())
    if built:
        e["PATH"] = os.pathsep.join([str(cache / "bin"), python_bin, e.get("PATH", "")])
        e.setdefault("PULUMI_HOME", str(cache / "pulumi-home"))
        e["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] = "true"
    else:  # the user's CLI finds its own plugins; the program runs on this Python
        e["PATH"] = os.pathsep.join([python_bin, e.get("PATH", "")])
    backend = stacks.backend(stack)
    local_only = not backend.remote_state_allowed and os.environ.get("DCDRILL_LAB_REMOTE_BACKEND") != "1"
    url = e.get("PULUMI_BACKEND_URL", "")
    if local_only and url and not url.startswith("file://"):
        raise RemoteStateRefused(
            f"stack {stack} is a lab stack, whose Pulumi state holds its passwords and this machine's "
            f"hosts: it stays on this machine, not at PULUMI_BACKEND_URL={url}. Unset it, or set "
            "DCDRILL_LAB_REMOTE_BACKEND=1 to keep it there anyway"
        )
    if not url and (built or local_only or not _logged_in(e)):
        local = state_dir() / "pulumi-state"
        local.mkdir(mode=0o700, parents=True, exist_ok=True)
        e["PULUMI_BACKEND_URL"] = f"file://{local}"  # never Pulumi Cloud unasked
    e["PULUMI_SKIP_UPDATE_CHECK"] = "true"
    e.setdefault("PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK", "true")
    if "PULUMI_CONFIG_PASSPHRASE" not in e and "PULUMI_CONFIG_PASSPHRASE_FILE" not in e:
        passphrase = backend.passphrase_file()
        if passphrase is None:
            raise PulumiError(f"stack {stack} keeps secrets beyond this machine: set PULUMI_CONFIG_PASSPHRASE")
        e["PULUMI_CONFIG_PASSPHRASE_FILE"] = str(passphrase)  # the file's name, never the passphrase
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
    res = subprocess.run(
        [str(exe), *cmd[1:]],
        cwd=project_dir(),
        env=env(stack),
        text=True,
        stdout=subprocess.PIPE if capture else None,
        stderr=subprocess.PIPE if capture else None,
    )
    if res.returncode != 0:
        raise PulumiError(f"`{' '.join(cmd)}` failed ({res.returncode})" + (f":\n{res.stderr}" if capture else ""))
    return res.stdout or ""


def ensure_stack(stack: str) -> None:
    exe = str(installed())
    have = subprocess.run(
        [exe, "stack", "ls", "--json"], cwd=project_dir(), env=env(stack), capture_output=True, text=True
    )
    names = [s["name"] for s in json.loads(have.stdout or "[]")] if have.returncode == 0 else []
    if stack not in names:
        made = subprocess.run(
            [exe, "stack", "init", stack, "--secrets-provider", "passphrase", "--non-interactive"],
            cwd=project_dir(),
            env=env(stack),
            capture_output=True,
            text=True,
        )
        if made.returncode != 0:
            raise PulumiError(
                f"`pulumi stack init {stack}` in {project_dir()} failed: {(made.stderr or have.stderr).strip()}"
            )


def _program() -> None:
    """The project's program, Pulumi.yaml's `main:` (dcdrill's own `infra/`, or `init`'s
    `program/`), run as `pulumi up` by hand would run it."""
    settings = yaml.safe_load((project_dir() / "Pulumi.yaml").read_text()) or {}
    runpy.run_path(str(project_dir() / settings.get("main", ".")), run_name="__main__")


def _command(exe: Path):
    """The Automation API's handle on `exe`: it wants the folder that holds `bin/pulumi`."""
    from pulumi import automation as auto

    root = exe.parent.parent
    if exe.parent.name != "bin" or exe.name != "pulumi":  # DCDRILL_PULUMI may name any file
        root = state_dir() / "pulumi-root"
        (root / "bin").mkdir(parents=True, exist_ok=True)
        link = root / "bin" / "pulumi"
        link.unlink(missing_ok=True)
        link.symlink_to(exe.resolve())
    return auto.PulumiCommand(root=str(root), skip_version_check=True)


def _automated(stack: str, operation: Callable, progress: bool) -> None:
    """Run one Automation API operation on `stack`; with `progress`, Pulumi's own lines as they
    come, else nothing unless it fails. PulumiError carries the CLI's own words on failure."""
    from pulumi import automation as auto

    ensure_stack(stack)
    workspace = auto.LocalWorkspace(
        work_dir=str(project_dir()), program=_program, pulumi_command=_command(installed()), env_vars=env(stack)
    )
    try:
        operation(auto.Stack.select(stack, workspace), print if progress else None)
    except auto.errors.CommandError as exc:
        raise PulumiError(f"pulumi on stack {stack} failed:\n{_errors(str(exc))}") from None


def _errors(said: str) -> str:
    """Pulumi's `error:` lines, each once (the program's refusal appears in the progress, the
    diagnostics and the unhandled-error line alike), else the output's last lines."""
    found: dict[str, None] = {}
    for line in said.splitlines():
        if "error:" in line:
            found.setdefault("error:" + line.split("error:", 1)[1].removeprefix(" an unhandled error occurred:"))
    return "\n".join(f"  {e}" for e in found) or "\n".join(said.strip().splitlines()[-20:])


def up(stack: str, progress: bool = False) -> None:
    """`pulumi up`; with `progress`, Pulumi's own line per resource as it goes (a lab's first up
    takes a minute or more)."""
    _automated(
        stack,
        lambda s, out: s.up(on_output=out, suppress_outputs=True, show_secrets=False, suppress_progress=not progress),
        progress,
    )


def preview(stack: str) -> list[dict]:
    """`pulumi preview`: the step it would take for each resource (unchanged ones included), as
    {"urn", "op", "inputs"} with secrets left masked."""
    steps: list[dict] = []

    def step(event) -> None:
        meta = event.resource_pre_event and event.resource_pre_event.metadata
        if meta:
            state = meta.new or meta.old
            steps.append(
                {
                    "urn": meta.urn,
                    "op": str(getattr(meta.op, "value", meta.op)),
                    "inputs": dict(state.inputs or {}) if state else {},
                }
            )

    _automated(stack, lambda s, out: s.preview(on_event=step), False)
    return steps


def destroy(stack: str) -> None:
    _automated(stack, lambda s, out: s.destroy(suppress_progress=True, show_secrets=False), False)


def refresh(stack: str) -> None:
    _automated(stack, lambda s, out: s.refresh(suppress_progress=True, show_secrets=False), False)


def chosen_passwords(stack: str) -> dict:
    """The passwords the user set as secrets (dcdrill:passwords), as Pulumi decrypts them: kept in
    this process only, for their check before `pulumi up`."""
    ensure_stack(stack)
    config = json.loads(run(stack, "config", "--json", "--show-secrets", capture=True) or "{}")
    return (config.get("dcdrill:passwords") or {}).get("objectValue") or {}


def outputs(stack: str) -> dict:
    ensure_stack(stack)
    return json.loads(run(stack, "stack", "output", "--json", "--show-secrets", capture=True) or "{}")


def _resources(stack: str) -> list[dict]:
    """The resources the stack's state holds (`pulumi stack export`)."""
    ensure_stack(stack)
    state = json.loads(run(stack, "stack", "export", capture=True))
    return [r for r in state.get("deployment", {}).get("resources") or [] if isinstance(r, dict)]


def remaining(stack: str) -> list[str]:
    """What the stack's state still holds but the stack and its providers: `type name (id)` each,
    what a failed destroy left in the account."""
    out = []
    for r in _resources(stack):
        kind = str(r.get("type"))
        if kind != "pulumi:pulumi:Stack" and not kind.startswith("pulumi:providers:"):
            out.append(f"{kind} {str(r.get('urn')).rsplit('::', 1)[-1]} ({r.get('id') or 'no id'})")
    return out


def resource_count(stack: str) -> int:
    return len(_resources(stack))
