"""Pulumi drives the program through its Automation API (infra/pulumi_cli.py): the CLI setup
builds has no language host, so the program runs in dcdrill's process and the CLI reaches it with
`--client`. The same path serves a user's own CLI, and the stack files stay Pulumi's own."""

import json

import pytest

from dcdrill.infra import pulumi_cli
from dcdrill.infra.constants import cache_dir, state_dir
from tests import ROOT


def test_setups_cli_has_no_language_host_and_previews_the_lab():
    """`preview` runs the project's `main:` in this process: every lab resource sits under the Lab
    component (hosts, links and DC namespaces under their DC's), and no input holds this
    checkout's path, so a checkout moved elsewhere is the same lab, not a new one."""
    assert not (cache_dir() / "bin" / "pulumi-language-python").exists()
    steps = pulumi_cli.preview("local")  # the lab may be up: unchanged resources are listed too
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
        inputs = {k: v for k, v in s["inputs"].items() if k != "__provider"}  # the pickled provider
        assert str(ROOT) not in json.dumps(inputs), (name, inputs)


def test_a_program_error_reaches_the_user_in_pulumis_words(tmp_path, monkeypatch):
    """The program's own refusal (a topology rule, with its numbers), from an init'd project's
    `program/`, comes back as PulumiError."""
    import yaml

    from dcdrill import project

    folder = tmp_path / "theirs"
    project.init(folder)
    doc = yaml.safe_load((folder / "Pulumi.local.yaml").read_text())
    doc["config"]["dcdrill:cluster"]["replication"]["factor"] = 5  # 4 brokers
    (folder / "Pulumi.local.yaml").write_text(yaml.safe_dump(doc))
    monkeypatch.setenv("DCDRILL_PROJECT", str(folder))
    (tmp_path / "state").mkdir()
    monkeypatch.setenv("PULUMI_BACKEND_URL", f"file://{tmp_path / 'state'}")
    with pytest.raises(pulumi_cli.PulumiError) as err:
        pulumi_cli.preview("local")
    said = str(err.value)
    assert "factor-exceeds-brokers" in said and "replication factor 5 > 4 brokers" in said, said[-2000:]


def _users_cli(tmp_path, monkeypatch):
    """A `pulumi` on PATH that is not setup's (a symlink to its build, so the test needs no
    download), beside the dynamic-provider launcher the official release ships."""
    bin_dir = tmp_path / "their-bin"
    bin_dir.mkdir()
    for name in ("pulumi", "pulumi-resource-pulumi-python"):
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
    assert e["PULUMI_BACKEND_URL"] == f"file://{state_dir() / 'pulumi-state'}"  # not logged in: never the cloud
    assert "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION" not in e and not e["PATH"].startswith(str(cache_dir()))
    (tmp_path / "their-pulumi-home").mkdir()
    (tmp_path / "their-pulumi-home" / "credentials.json").write_text('{"current": "https://api.example.invalid"}')
    # Their `pulumi login` holds for an AWS stack; a lab stack's state stays on this machine.
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "theirs")
    assert "PULUMI_BACKEND_URL" not in pulumi_cli.env("aws-3az")
    assert pulumi_cli.env("local")["PULUMI_BACKEND_URL"] == f"file://{state_dir() / 'pulumi-state'}"
    monkeypatch.setenv("PULUMI_BACKEND_URL", "file:///their/state")
    assert pulumi_cli.env("local")["PULUMI_BACKEND_URL"] == "file:///their/state"
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # none on PATH: setup's build, with its own state folder
    assert pulumi_cli.is_built(pulumi_cli.executable())
    assert pulumi_cli.env("local")["PULUMI_HOME"] == str(tmp_path / "their-pulumi-home")  # given, so kept


def test_the_users_pulumi_previews_the_lab(tmp_path, monkeypatch):
    _users_cli(tmp_path, monkeypatch)
    monkeypatch.setenv("PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION", "true")  # this machine: no downloads
    assert pulumi_cli.preview("local")


def test_dcdrill_pulumi_may_name_a_cli_outside_a_bin_folder(tmp_path, monkeypatch):
    """The Automation API wants `<root>/bin/pulumi`; DCDRILL_PULUMI may be any file."""
    exe = tmp_path / "pulumi-3.259"
    exe.symlink_to(cache_dir() / "bin" / "pulumi")
    monkeypatch.setenv("DCDRILL_PULUMI", str(exe))
    assert pulumi_cli.executable() == exe
    assert pulumi_cli.preview("local")


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
    assert pulumi_cli.preview("local")  # and the init'd project's `program/` runs with their secret beside it


def test_a_key_in_dcdrills_namespace_by_mistake_is_named_with_where_it_belongs():
    """`pulumi config set k v` in this project writes dcdrill:k; the refusal says where a key of one's own goes."""
    import yaml

    from dcdrill.infra.schema import ConfigError, parse

    cfg = yaml.safe_load((ROOT / "Pulumi.local.yaml").read_text())["config"]
    with pytest.raises(ConfigError) as err:
        parse({**cfg, "dcdrill:token": "x"}, "Pulumi.local.yaml")
    assert "dcdrill:token: unknown key" in str(err.value) and "myteam:key" in str(err.value)
