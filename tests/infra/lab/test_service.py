"""infra/lab/service.py, the lab's root supervisor: it runs only what root alone could have
written, as a service's own uid only, and one start or stop of a service at a time. (The lab
test tests/infra/test_lab_security.py checks the roles put every spec where its service cannot
write it.)"""

import json
import os
import subprocess
import sys
import time

import pytest

from dcdrill.infra.lab import service


@pytest.fixture
def spec_dir(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the supervisor's checks are of root's files")
    folder = tmp_path / "services"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    return folder


def write_spec(folder, **changes):
    spec = {
        "name": "kafka",
        "argv": [sys.executable, "-c", "import time; time.sleep(30)"],
        "match": "time.sleep(30)",
        "user": "200513",
        "log": str(folder.parent / "kafka.out"),
        "pidfile": str(folder / "kafka.pid"),
        **changes,
    }
    path = folder / "kafka.json"
    path.write_text(json.dumps(spec))
    path.chmod(0o644)
    return path


def test_a_spec_of_roots_alone_loads(spec_dir):
    assert service.load(str(write_spec(spec_dir)))["name"] == "kafka"


@pytest.mark.parametrize(
    "tamper, said",
    [
        (lambda p: p.chmod(0o666), "writable by root alone"),
        (lambda p: p.parent.chmod(0o777), "writable by root alone"),
        (lambda p: os.chown(p, 200513, 200513), "owner uid 200513"),
        (lambda p: os.chown(p.parent, 200513, 200513), "owner uid 200513"),
    ],
    ids=["a spec others may write", "a folder others may write", "a spec the service owns", "a folder it owns"],
)
def test_a_spec_anyone_but_root_could_have_written_is_refused(spec_dir, tamper, said):
    path = write_spec(spec_dir)
    tamper(path)
    with pytest.raises(service.UnsafeSpec, match=said):
        service.load(str(path))


def test_a_link_in_the_specs_place_and_a_pidfile_elsewhere_are_refused(spec_dir, tmp_path):
    real = write_spec(spec_dir)
    link = spec_dir / "linked.json"
    link.symlink_to(real)
    with pytest.raises(service.UnsafeSpec):
        service.load(str(link))
    with pytest.raises(service.UnsafeSpec, match="pidfile must sit beside it"):
        service.load(str(write_spec(spec_dir, pidfile=str(tmp_path / "elsewhere.pid"))))


@pytest.mark.parametrize("user", ["root", "0", "", None, "999", "1"])
def test_root_and_system_uids_are_never_a_services(user):
    with pytest.raises(SystemExit, match="refusing to run a service as"):
        service.identity(user)


def test_the_hosts_login_user_is_never_a_service(monkeypatch):
    monkeypatch.setattr(service, "LOGIN_USER", "nobody")  # a user this machine has
    with pytest.raises(SystemExit, match="not a service's own"):
        service.identity(str(__import__("pwd").getpwnam("nobody").pw_uid))


def test_the_log_is_never_opened_through_a_link_the_service_put_there(spec_dir, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (spec_dir.parent / "kafka.out").symlink_to(victim)
    with pytest.raises(OSError):
        service.start(service.load(str(write_spec(spec_dir))))
    assert victim.read_text() == "keep" and not (spec_dir / "kafka.pid").exists()


def test_two_starts_of_one_service_wait_for_each_other(spec_dir):
    spec = service.load(str(write_spec(spec_dir)))
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time, json; from dcdrill.infra.lab import service\n"
         "with service.locked(json.loads(sys.argv[1])):\n    print('held', flush=True); time.sleep(1.5)",
         json.dumps(spec)],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert holder.stdout.readline().strip() == "held"
    started = time.monotonic()
    with service.locked(spec):
        waited = time.monotonic() - started
    holder.wait(10)
    assert waited > 0.8
