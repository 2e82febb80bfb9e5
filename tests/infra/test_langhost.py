"""The language host `make setup` installs for the Pulumi CLI it builds (infra/toolchain/langhost.py):
`pulumi preview` ends without a traceback (the CLI ends its plugins with SIGINT), and `pulumi about`
lists the program's packages (GetProgramDependencies)."""
import subprocess

from infra import pulumi_cli
from infra.constants import ROOT, cache_dir


def pulumi(*args: str) -> subprocess.CompletedProcess:
    pulumi_cli.ensure_stack("local")
    return subprocess.run([str(cache_dir() / "bin" / "pulumi"), *args], env=pulumi_cli.env("local"), cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_preview_ends_without_a_traceback():
    res = pulumi("preview", "--stack", "local", "--non-interactive")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out[-3000:]


def test_about_lists_the_programs_packages():
    res = pulumi("about", "--stack", "local")
    out = res.stdout + res.stderr
    assert "not implemented" not in out.lower(), out[-3000:]
    assert any(line.split()[:1] == ["pyspark"] for line in out.splitlines()), out[-3000:]
