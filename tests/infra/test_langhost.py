"""The language host `make setup` installs for the Pulumi CLI it builds (infra/toolchain/langhost.py):
`pulumi preview` ends without a traceback (the CLI ends its plugins with SIGINT), and `pulumi about`
lists the program's packages (GetProgramDependencies)."""
import json
import subprocess
from pathlib import Path

from dcdrill.infra import pulumi_cli
from dcdrill.infra.constants import cache_dir
from tests import ROOT


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
    passwords = [s for s in dynamic if s["urn"].split("::")[-2].startswith("dcdrill:secrets:StackPasswords$")]
    assert sorted(s["urn"].split("::")[-1] for s in passwords) == ["main-sasl", "main-zookeeper"]
    dynamic = [s for s in dynamic if s not in passwords]
    assert len(dynamic) >= 17  # local: the router, 3 DC namespaces and links, 9 hosts, the shaper
    for s in dynamic:
        parents, name = s["urn"].split("::")[-2], s["urn"].split("::")[-1]
        assert parents.startswith("dcdrill:lab:Lab$"), s["urn"]
        if name.startswith(("host-", "link-", "dc-")):
            assert "$dcdrill:lab:Datacenter$" in parents, s["urn"]
        state = s.get("newState") or s.get("oldState") or {}
        inputs = {k: v for k, v in state.get("inputs", {}).items() if k != "__provider"}  # shown as [secret]
        assert str(ROOT) not in json.dumps(inputs), (name, inputs)


def _users_cli(tmp_path, monkeypatch):
    """A `pulumi` on PATH laid out as the official release is (the CLI beside its language host
    and dynamic-provider launcher): symlinks to setup's build, so the test needs no download."""
    bin_dir = tmp_path / "their-bin"
    bin_dir.mkdir()
    for name in ("pulumi", "pulumi-language-python", "pulumi-resource-pulumi-python"):
        (bin_dir / name).symlink_to(cache_dir() / "bin" / name)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.delenv("DCDRILL_PULUMI", raising=False)
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    monkeypatch.setenv("PULUMI_HOME", str(tmp_path / "their-pulumi-home"))
    return bin_dir


def test_a_pulumi_on_path_is_used_with_the_users_login_or_backend(tmp_path, monkeypatch):
    bin_dir = _users_cli(tmp_path, monkeypatch)
    assert pulumi_cli.executable() == bin_dir / "pulumi" and not pulumi_cli.is_built(pulumi_cli.executable())
    e = pulumi_cli.env("local")
    assert e["PULUMI_HOME"] == str(tmp_path / "their-pulumi-home")  # their plugins and login, not setup's
    assert e["PULUMI_BACKEND_URL"] == f"file://{cache_dir() / 'pulumi-state'}"  # not logged in: never the cloud
    assert "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION" not in e and not e["PATH"].startswith(str(cache_dir()))
    (tmp_path / "their-pulumi-home").mkdir()
    (tmp_path / "their-pulumi-home" / "credentials.json").write_text('{"current": "https://api.example.invalid"}')
    assert "PULUMI_BACKEND_URL" not in pulumi_cli.env("local")  # their `pulumi login`
    monkeypatch.setenv("PULUMI_BACKEND_URL", "file:///their/state")
    assert pulumi_cli.env("local")["PULUMI_BACKEND_URL"] == "file:///their/state"
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # none on PATH: setup's build, with its own state folder
    assert pulumi_cli.is_built(pulumi_cli.executable())
    assert pulumi_cli.env("local")["PULUMI_HOME"] == str(tmp_path / "their-pulumi-home")  # given, so kept


def test_the_users_pulumi_previews_the_lab(tmp_path, monkeypatch):
    _users_cli(tmp_path, monkeypatch)
    monkeypatch.setenv("PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION", "true")  # this machine: no downloads
    out = pulumi_cli.run("local", "preview", "--json", capture=True)
    assert json.loads(out)["steps"], out[-2000:]


def test_required_plugins_are_the_stacks_providers_only(monkeypatch):
    """GetRequiredPlugins: the AWS provider at pulumi_aws's own plugin version for an AWS stack,
    nothing for a lab stack (dynamic resources), nothing without a stack named."""
    import pulumi_aws
    from pulumi.runtime.proto import language_pb2

    from dcdrill.infra.toolchain import langhost

    version = json.loads((Path(pulumi_aws.__file__).with_name("pulumi-plugin.json")).read_text())["version"]
    host = langhost.ProjectLanguageServer("127.0.0.1:0")
    asked = {}
    for stack in ("aws-3az", "local", None):
        if stack:
            monkeypatch.setenv("DCDRILL_STACK", stack)
        else:
            monkeypatch.delenv("DCDRILL_STACK", raising=False)
        res = host.GetRequiredPlugins(language_pb2.GetRequiredPluginsRequest(), None)
        asked[stack] = [(p.name, p.kind, p.version) for p in res.plugins]
    assert asked == {"aws-3az": [("aws", "resource", version)], "local": [], None: []}
    assert pulumi_cli.env("local")["DCDRILL_STACK"] == "local"


def test_the_users_own_passphrase_and_secrets_work_on_a_new_project(tmp_path, monkeypatch):
    """Pulumi's conventions: the shipped stacks carry no salt, so the first `stack init` makes one
    from the user's own PULUMI_CONFIG_PASSPHRASE (a shipped salt answered "incorrect passphrase");
    a secret of the user's own namespace is Pulumi's to keep, and dcdrill reads the stack beside it."""
    import yaml

    from dcdrill import project
    from dcdrill.infra import stack as stacks

    shipped = [f for f in project.scaffold(tmp_path) if f.path.startswith("Pulumi.") and f.path != "Pulumi.yaml"]
    assert shipped and not [f.path for f in shipped if "encryptionsalt" in yaml.safe_load(f.text)]
    folder = tmp_path / "theirs"
    project.init(folder)
    monkeypatch.setenv("DCDRILL_PROJECT", str(folder))
    (tmp_path / "state").mkdir()
    monkeypatch.setenv("PULUMI_BACKEND_URL", f"file://{tmp_path / 'state'}")
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "their own passphrase")
    pulumi_cli.ensure_stack("local")
    assert "encryptionsalt" in yaml.safe_load((folder / "Pulumi.local.yaml").read_text())
    pulumi_cli.run("local", "config", "set", "--secret", "myteam:token", "s3cr3t", capture=True)
    assert pulumi_cli.run("local", "config", "get", "myteam:token", capture=True).strip() == "s3cr3t"
    doc = yaml.safe_load((folder / "Pulumi.local.yaml").read_text())
    assert "secure" in doc["config"]["myteam:token"]  # encrypted in the file
    assert stacks.load("local").datacenters  # dcdrill's own keys still read, the user's left alone


def test_a_key_in_dcdrills_namespace_by_mistake_is_named_with_where_it_belongs():
    """`pulumi config set k v` in this project writes dcdrill:k; the refusal says where a key of one's own goes."""
    import pytest
    import yaml

    from dcdrill.infra.schema import ConfigError, parse

    cfg = yaml.safe_load((ROOT / "Pulumi.local.yaml").read_text())["config"]
    with pytest.raises(ConfigError) as err:
        parse({**cfg, "dcdrill:token": "x"}, "Pulumi.local.yaml")
    assert "dcdrill:token: unknown key" in str(err.value) and "myteam:key" in str(err.value)
