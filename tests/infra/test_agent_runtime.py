"""What the client hosts' agent Python is made of (infra/agent_runtime.py, roles/dcdrill_agent):
the wheels at the control's own versions, and dcdrill's modules an agent runs, in a zip that is
the same bytes for the same modules. The lab tests install and run it on every client host."""

import zipfile
from importlib import metadata

from dcdrill.infra import agent_runtime


def test_the_bundle_holds_the_agents_layers_and_nothing_above_them(tmp_path):
    bundle = agent_runtime.bundle(tmp_path / "a")
    names = set(zipfile.ZipFile(bundle).namelist())
    assert {
        "dcdrill/__init__.py",
        "dcdrill/infra/observe/agent.py",
        "dcdrill/validation/host_process.py",
        "dcdrill/record/ledger.py",
        "dcdrill/shipped/roles/zookeeper/defaults/main.yml",
        "dcdrill/validation/java_client.py",
        f"dcdrill/validation/jvm/{agent_runtime.JAVA_WORKLOAD_JAR}",  # compiled: the hosts have no javac
        "dcdrill/validation/jvm/log4j2.properties",
    } <= names
    assert not [n for n in names if n.endswith(".java")]
    assert not [n for n in names if n.startswith(("dcdrill/spark/", "dcdrill/chaos/", "dcdrill/cli"))]
    assert not [n for n in names if "__pycache__" in n]
    again = agent_runtime.bundle(tmp_path / "b")
    assert again.name == bundle.name and again.read_bytes() == bundle.read_bytes()


def test_the_wheels_are_pinned_to_the_controls_own_versions(tmp_path):
    pins = dict(p.split("==") for p in agent_runtime.pins())
    assert pins["confluent-kafka"] == metadata.version("confluent-kafka")
    assert pins["kafka-python"] == metadata.version("kafka-python") and "pip" in pins
    assert agent_runtime.wheels_dir(tmp_path) == agent_runtime.wheels_dir(tmp_path)


def test_the_wheels_travel_as_one_stored_zip_of_exactly_their_folder(tmp_path, monkeypatch):
    """One copy per host (the role unpacks it there), the same bytes for the same wheels."""
    monkeypatch.setattr(agent_runtime, "pins", lambda: ["a==1"])
    for cache in (tmp_path / "a", tmp_path / "b"):
        folder = agent_runtime.wheels_dir(cache)
        folder.mkdir(parents=True)
        for name in ("pip-25.0-py3-none-any.whl", "x-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"):
            (folder / name).write_bytes(name.encode() * 100)
        (folder / ".complete").write_text("a==1\n")
    one, two = agent_runtime.wheels_archive(tmp_path / "a"), agent_runtime.wheels_archive(tmp_path / "b")
    assert one.name == agent_runtime.wheels_dir(tmp_path / "a").name + ".zip" and one.read_bytes() == two.read_bytes()
    with zipfile.ZipFile(one) as z:
        assert sorted(z.namelist()) == ["pip-25.0-py3-none-any.whl", "x-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"]
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_STORED}
    assert agent_runtime.inventory_vars(tmp_path / "a")["dcdrill_agent_wheels_archive"] == str(one)


def test_a_new_bundle_replaces_the_earlier_ones_on_the_control(tmp_path):
    earlier = tmp_path / "agent" / "dcdrill-000000000000.zip"
    earlier.parent.mkdir(parents=True)
    earlier.write_bytes(b"an earlier version's modules")
    wheels = tmp_path / "agent" / "wheels-x.zip"
    wheels.write_bytes(b"not a bundle")
    bundle = agent_runtime.bundle(tmp_path)
    assert sorted(p.name for p in bundle.parent.iterdir()) == sorted([bundle.name, wheels.name])


def test_a_control_that_cannot_compile_the_java_workload_ships_why_and_the_rest(tmp_path, monkeypatch):
    """No Kafka jars in the cache (no setup yet): the bundle still holds every module, and says why
    the java client cannot run instead of its program (validation/java_client.command reads it)."""
    monkeypatch.setenv("DCDRILL_CACHE", str(tmp_path / "empty"))
    with zipfile.ZipFile(agent_runtime.bundle(tmp_path / "a")) as z:
        names = set(z.namelist())
        why = z.read(f"dcdrill/validation/jvm/{agent_runtime.JAVA_UNAVAILABLE}").decode()
    assert "dcdrill/validation/java_client.py" in names
    assert f"dcdrill/validation/jvm/{agent_runtime.JAVA_WORKLOAD_JAR}" not in names
    assert "Kafka's jars" in why and "dcdrill setup" in why
