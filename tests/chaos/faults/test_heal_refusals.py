"""Heal acts only on what the stack defines (hostile records, no lab): a fault state, an agents
row or a kept copy that names a service, disk, DC, folder, region or instance that is not the
stack's own is refused, exit 2 naming the file and entry, and nothing at all is run."""

import json

import pytest

from dcdrill import cli
from dcdrill.chaos.faults import lab as lab_faults
from dcdrill.chaos.faults import recovery
from dcdrill.chaos.faults.aws import AwsFaults
from dcdrill.infra import ansible, stack
from dcdrill.infra.aws import plan
from dcdrill.infra.observe import open_drills
from dcdrill.record import DrillRecord
from dcdrill.record.contents import AGENTS, FAULT_STATE
from dcdrill.validation import workload


@pytest.fixture
def lab_stack(tmp_path, monkeypatch):
    """Stack `local` as `lab up` leaves it for heal (its inventory), in a cache of the test's own;
    every action heal could take is a tripwire."""
    monkeypatch.setenv("DCDRILL_CACHE", str(tmp_path / "cache"))
    inv = stack.backend("local").inventory(stack.load("local"))
    path = ansible.inventory_path("local")
    path.parent.mkdir(parents=True)
    path.write_text(inv.to_json())

    def tripwire(*a, **k):
        raise AssertionError("heal acted on a refused record")

    for name in ("undo", "restart_broker"):
        monkeypatch.setattr(lab_faults.LabFaults, name, tripwire)
    monkeypatch.setattr(lab_faults, "start_service", tripwire)
    monkeypatch.setattr(recovery, "stop_agents", tripwire)
    monkeypatch.setattr(recovery, "collect_agents", tripwire)
    monkeypatch.setattr(type(stack.backend("local")), "heal_in_place", tripwire)
    return inv


def broker(inv):
    return inv.in_dc("dc-a", lab_faults.DC_LOSS_ROLES)[0]


def active(undo, **changed) -> dict:
    """An active fault as chaos/faults/actions._inject notes it."""
    return {"fault": "kill-dc", "target": "dc-a", "start_ms": 1_700_000_000_000, "end_ms": None, "undo": undo} | changed


def with_state(tmp_path, state: dict) -> DrillRecord:
    record = DrillRecord(tmp_path / "run")
    record.write_json(FAULT_STATE, state)
    open_drills.note("local", str(record.path.resolve()))
    return record


def with_fault(tmp_path, undo: dict) -> DrillRecord:
    return with_state(tmp_path, {"active": [active(undo)]})


def refused(capsys, *needles: str) -> None:
    assert cli.main(["heal", "--stack", "local"]) == 2
    err = capsys.readouterr().err
    assert "heal of stack local refused, nothing was done" in err, err
    for needle in needles:
        assert needle in err, err
    assert "Traceback" not in err


def good_restart(inv) -> list:
    b = broker(inv)
    return [b.name, lab_faults.spec_path(b), b.netns]


UNDOS = {
    "a spec of the record's choosing": lambda inv: {
        "restart": [[broker(inv).name, "/tmp/evil.json", broker(inv).netns]]
    },
    "another host's namespace": lambda inv: {"restart": [good_restart(inv)[:2] + ["dcd-elsewhere"]]},
    "a host the stack lacks": lambda inv: {"restart": [["b9.dc-z.lab", "/x/kafka/kafka.json", "dcd-b9"]]},
    "a restart that is no list": lambda inv: {"restart": "b1"},
    "a disk outside the stack": lambda inv: {"power": ["../../etc"]},
    "a DC the stack lacks": lambda inv: {"isolation": 99},
    "a DC given as text": lambda inv: {"isolation": "1; reboot"},
    "a DC given as true": lambda inv: {"isolation": True},
    "a link to a DC the stack lacks": lambda inv: {"links": [[1, 9]]},
    "a link that is no pair": lambda inv: {"links": [[1, 2, 3]]},
    "a change no lab fault makes": lambda inv: {"exec": ["sh", "-c", "id"]},
    "a kill time that is no time": lambda inv: {"restart": [good_restart(inv)], "killed_ms": -5},
}


@pytest.mark.parametrize("case", UNDOS)
def test_a_fault_state_naming_what_the_stack_does_not_define_is_refused(lab_stack, tmp_path, capsys, case):
    record = with_fault(tmp_path, UNDOS[case](lab_stack))
    refused(capsys, f"{record.file(FAULT_STATE)}: kill-dc dc-a:")
    assert record.active_faults(), "a refused heal changed the fault state"


def test_the_undo_a_real_kill_dc_notes_is_accepted(lab_stack):
    inv = lab_stack
    specs = [[h.name, lab_faults.spec_path(h), h.netns] for h in inv.in_dc("dc-a", lab_faults.DC_LOSS_ROLES)]
    driver = recovery.stack_driver("local", None)
    assert driver.undo_problems({"restart": specs, "killed_ms": 1, "power": ["b1"], "isolation": 1}) == []
    assert driver.undo_problems({"links": [[1, 2]]}) == []


# chaos-state.json held to record/models.FaultState before any undo is looked at.
def without(key: str) -> dict:
    return {k: v for k, v in active({}).items() if k != key}


STATES = {
    "an undo that is a command": ({"active": [active("rm -rf /")]}, "(0.undo: input should be a valid dictionary)"),
    "a fault with no undo": (
        {"active": [without("undo")]},
        "(0.undo: field required)",
    ),
    "a fault dcdrill has no name for": (
        {"active": [active({}, fault="reboot")]},
        "(0.fault: input should be",
    ),
    "a fault that has ended": ({"active": [active({}, end_ms=1_700_000_000_001)]}, "(0.end_ms: input should be none)"),
    "a fault with no start": (
        {"active": [without("start_ms")]},
        "(0.start_ms: field required)",
    ),
    "a key of its own": ({"active": [active({}, run=["sh"])]}, "unknown key 'active.0.run'"),
    "no list of faults": ({"active": {"kill-dc": {}}}, "active must be"),
    "a copy's name with a path": ({"active": [active({})], "kept_as": "../../stacks"}, "kept_as must be"),
    "no object at all": ([active({})], FAULT_STATE),
}


@pytest.mark.parametrize("case", STATES)
def test_a_fault_state_its_model_does_not_hold_is_refused_naming_the_key(lab_stack, tmp_path, capsys, case):
    state, needle = STATES[case]
    record = with_state(tmp_path, state)
    refused(capsys, f"{record.file(FAULT_STATE)}", needle)
    assert record.read_json(FAULT_STATE) == state, "a refused heal changed the fault state"


def test_a_garbled_fault_state_is_refused_naming_its_file(lab_stack, tmp_path, capsys):
    record = DrillRecord(tmp_path / "run")
    record.file(FAULT_STATE).parent.mkdir(parents=True)
    record.file(FAULT_STATE).write_text('{"active": [')
    open_drills.note("local", str(record.path.resolve()))
    refused(capsys, FAULT_STATE)


def agent_row(record: DrillRecord, **row) -> None:
    line = {"name": "p1", "pid": 4_000_000, "host": "c1.dc-a.lab", "cluster": None, "started_ms": 1, **row}
    with open(record.file(AGENTS), "a") as f:
        f.write(json.dumps(line) + "\n")


def host(inv, name="c1.dc-a.lab"):
    return next(h for h in inv.hosts() if h.name == name)


AGENT_ROWS = {
    "the root folder": (lambda inv, rec: {"folder": "/"}, "folder '/' on c1.dc-a.lab is not this drill's"),
    "another drill's folder": (
        lambda inv, rec: {"folder": workload.host_folder(host(inv), DrillRecord(rec.path.parent / "other"))},
        "is not this drill's",
    ),
    "a folder climbing out": (
        lambda inv, rec: {"folder": workload.host_folder(host(inv), rec) + "/../../.."},
        "is not this drill's",
    ),
    "a host the stack lacks": (
        lambda inv, rec: {"host": "evil.example", "folder": f"/x/agents/{rec.agent_key}"},
        "evil.example is not a host of stack local",
    ),
    "a name that is a path": (
        lambda inv, rec: {"name": "../../chaos-state", "folder": workload.host_folder(host(inv), rec)},
        "not a name dcdrill gives a process",
    ),
    "a cluster the stack lacks": (
        lambda inv, rec: {"cluster": "mars", "folder": workload.host_folder(host(inv), rec)},
        "cluster 'mars' is not one of stack local's",
    ),
}


@pytest.mark.parametrize("case", AGENT_ROWS)
def test_an_agents_row_naming_what_the_stack_does_not_define_is_refused(lab_stack, tmp_path, capsys, case):
    make, said = AGENT_ROWS[case]
    record = DrillRecord(tmp_path / "run")
    record.path.mkdir(parents=True)
    agent_row(record, **make(lab_stack, record))
    open_drills.note("local", str(record.path.resolve()))
    refused(capsys, f"{record.file(AGENTS)}: agent", said)


def test_the_folder_a_real_workload_process_notes_is_accepted(lab_stack, tmp_path):
    record = DrillRecord(tmp_path / "run")
    record.path.mkdir(parents=True)
    agent_row(record, folder=workload.host_folder(host(lab_stack), record))
    record.note_agent("experiment", 4_000_001)
    assert recovery.refusals("local", [record], {}) == []


def keep(name: str, text: str) -> None:
    from dcdrill.infra.constants import state_dir
    from dcdrill.infra.lab import layout

    cluster = stack.load("local").name
    folder = layout.lab_dir(state_dir()) / "fault-states" / cluster
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(text)


def test_a_kept_copy_with_a_foreign_undo_is_refused(lab_stack, capsys):
    keep("r1-0123abcd", json.dumps({"active": [active({"power": ["/"]})]}))
    refused(capsys, "the fault-state copy r1-0123abcd: kill-dc dc-a: power '/'")


def test_a_kept_copy_its_model_does_not_hold_is_refused(lab_stack, capsys):
    keep("r3-0123abcd", json.dumps({"active": [active({}, fault="reboot")]}))
    refused(capsys, "the fault-state copy r3-0123abcd: active must be a list of active faults (0.fault:")


def test_a_kept_copy_named_as_a_path_is_refused(lab_stack, capsys):
    keep(".hidden", json.dumps({"active": [active({})]}))
    refused(capsys, "the fault-state copy '.hidden': not a name dcdrill gives a copy")


def test_a_kept_copy_that_is_not_json_is_named(lab_stack, capsys):
    keep("r2-0123abcd", "{garbled")
    assert cli.main(["heal", "--stack", "local"]) == 2
    err = capsys.readouterr().err
    assert "r2-0123abcd.json is not JSON" in err and "Traceback" not in err


# The AWS driver, against the stack's own outputs (no account needed to refuse).
AWS_STACK = "aws-3az-tiebreaker"


@pytest.fixture
def aws_driver():
    t = stack.load(AWS_STACK)
    ids = {h.name: f"i-{n:017x}" for n, h in enumerate(t.hosts(), 1)}
    subnets = {dc.name: f"subnet-{n:017x}" for n, dc in enumerate(t.datacenters, 1)}
    inv = plan.inventory(
        t,
        stack.load_config(AWS_STACK),
        instance_ids=ids,
        subnet_ids=subnets,
        bucket="b",
        stack_tag=f"dcdrill/{AWS_STACK}",
        fis_role="arn:aws:iam::123456789012:role/r",
    )
    return AwsFaults(t, inv, stack.backend(AWS_STACK)), ids, subnets


def test_an_aws_undo_of_the_stacks_own_resources_is_accepted(aws_driver):
    d, ids, subnets = aws_driver
    region = d.inventory.vars["aws_regions"]["dc-a"]
    one = next(iter(ids.values()))
    undo = {
        "region": region,
        "services": [one],
        "start": [one],
        "fis": ["0" * 32],
        "isolations": [{"subnet": subnets["dc-a"], "vpc": "vpc-1", "original_acl": "acl-1"}],
        "netem": [{"region": region, "instances": [one]}],
    }
    assert d.undo_problems(undo) == []


@pytest.mark.parametrize(
    "undo, said",
    [
        ({"region": "us-east-1"}, "region 'us-east-1': not one of this stack's"),
        ({"services": ["i-0123456789abcdef0"]}, "services 'i-0123456789abcdef0': not an instance of this stack"),
        ({"start": ["i-another"]}, "start 'i-another': not an instance"),
        ({"mirrors": [{"host": "b1.dc-a.aws", "instance": "i-other"}]}, "not a MirrorMaker 2 host of this stack"),
        ({"isolations": [{"subnet": "subnet-foreign"}]}, "not a subnet of this stack"),
        ({"netem": [{"region": "eu-west-1", "instances": ["i-x"]}]}, "netem 'i-x': not an instance"),
        ({"fis": ["../../x"]}, "fis '../../x': not a token dcdrill makes"),
        ({"terminate": ["i-1"]}, "terminate: not a change an AWS fault makes"),
    ],
)
def test_an_aws_undo_naming_another_accounts_or_stacks_resources_is_refused(aws_driver, undo, said):
    d, _, _ = aws_driver
    assert any(said in p for p in d.undo_problems(undo)), d.undo_problems(undo)
