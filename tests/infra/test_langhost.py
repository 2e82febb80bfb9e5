"""The language host `make setup` installs for the Pulumi CLI it builds (infra/toolchain/langhost.py):
`pulumi preview` ends without a traceback (the CLI ends its plugins with SIGINT), and `pulumi about`
lists the program's packages (GetProgramDependencies)."""
import subprocess

from infra import pulumi_cli
from infra.constants import SOURCE as ROOT, cache_dir


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


def test_the_lab_is_grouped_in_components_and_its_inputs_name_no_checkout_path():
    """`pulumi preview --json`: every lab resource sits under the Lab component (hosts, links and DC
    namespaces under their DC's), and no input holds this checkout's path, so a checkout moved
    elsewhere is the same lab, not a new one."""
    import json

    res = pulumi("preview", "--stack", "local", "--non-interactive", "--json", "--show-sames")  # the lab may be up
    assert res.returncode == 0, res.stderr[-3000:]
    steps = json.loads(res.stdout)["steps"]
    dynamic = [s for s in steps if s["urn"].split("::")[-2].endswith("pulumi-python:dynamic:Resource")]
    assert len(dynamic) >= 17  # local: the router, 3 DC namespaces and links, 9 hosts, the shaper
    for s in dynamic:
        parents, name = s["urn"].split("::")[-2], s["urn"].split("::")[-1]
        assert parents.startswith("dcdrill:lab:Lab$"), s["urn"]
        if name.startswith(("host-", "link-", "dc-")):
            assert "$dcdrill:lab:Datacenter$" in parents, s["urn"]
        state = s.get("newState") or s.get("oldState") or {}
        inputs = {k: v for k, v in state.get("inputs", {}).items() if k != "__provider"}  # shown as [secret]
        assert str(ROOT) not in json.dumps(inputs), (name, inputs)
