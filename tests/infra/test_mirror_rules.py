"""Replicated stacks, offline (infra/mirror_rules.py and the schema): what MirrorMaker 2 cannot do
safely is refused, each rule named, with exit 2 from `dcdrill plan` and `dcdrill drill --check`.
The model they check: tests/infra/test_deployment.py."""

import copy
from pathlib import Path

import pytest
import yaml

from dcdrill import cli
from dcdrill.infra.deployment import MIRROR_USER

ROOT = Path(__file__).resolve().parents[2]
REPLICATED = yaml.safe_load((ROOT / "Pulumi.local-replicated.yaml").read_text())
AA = yaml.safe_load((ROOT / "Pulumi.local-replicated-aa.yaml").read_text())


def mirror(**kv):
    return lambda c: c["config"]["dcdrill:mirrors"][0].update(kv)


def second(**kv):
    return lambda c: c["config"]["dcdrill:clusters"][1].update(kv)


def acls_without_remote(c):
    for cl in c["config"]["dcdrill:clusters"]:
        cl["acls"] = [a for a in cl["acls"] if "." not in a["name"]]


def add_mirror(**kv):
    return lambda c: c["config"]["dcdrill:mirrors"].append({**c["config"]["dcdrill:mirrors"][0], **kv})


def three_clusters(*flows):
    """A third cluster, north in dc-c, and one-way mirrors along `flows` (source, target)."""

    def change(c):
        north = copy.deepcopy(c["config"]["dcdrill:clusters"][1])
        north.update(name="north", datacenters=[{"name": "dc-c", "brokers": 2, "controllers": 1}])
        c["config"]["dcdrill:clusters"].append(north)
        c["config"]["dcdrill:mirrors"] = [{"source": a, "target": b} for a, b in flows]

    return change


def brokers_everywhere(c):
    """Four clusters of 8 DCs with 32 brokers each: more broker ids than fit below the controllers'."""
    template = c["config"]["dcdrill:clusters"][1]
    c["config"]["dcdrill:clusters"] = [
        {
            **copy.deepcopy(template),
            "name": name,
            "datacenters": [{"name": f"{name}-{i}", "brokers": 32, "controllers": 1} for i in range(8)],
        }
        for name in ("east", "west", "north", "south")
    ]


BAD = [
    # the replicated keys' hidden-suite cases (issue: crash-safe drills, "Bad input")
    (
        "unknown source",
        REPLICATED,
        mirror(source="nowhere"),
        "[mirror-unknown-cluster] dcdrill:mirrors[0] (nowhere->west)",
    ),
    (
        "unknown target, active-active",
        REPLICATED,
        mirror(target="nowhere", mode="active-active"),
        "[mirror-unknown-cluster]",
    ),
    (
        "one flow twice",
        REPLICATED,
        add_mirror(),
        "dcdrill:mirrors[1]: the flow east -> west is declared already by dcdrill:mirrors[0]",
    ),
    (
        "one flow at both placements",
        REPLICATED,
        add_mirror(placement="source"),
        "the flow east -> west is declared already",
    ),
    (
        "active-active and the same one-way flow",
        REPLICATED,
        add_mirror(mode="active-active"),
        "the flow east -> west is declared already",
    ),
    (
        "two opposite one-way mirrors",
        REPLICATED,
        add_mirror(source="west", target="east"),
        "dcdrill:mirrors: the flows east -> west -> east make a loop",
    ),
    (
        "a ring of three",
        REPLICATED,
        three_clusters(("east", "west"), ("west", "north"), ("north", "east")),
        "the flows east -> west -> north -> east make a loop",
    ),
    (
        "a line break in topics",
        REPLICATED,
        mirror(topics="dcdrill-.*\nssl.endpoint.identification.algorithm="),
        "dcdrill:mirrors[0].topics: a control character ('\\n') in a topic regex",
    ),
    (
        "a Python-only regex",
        REPLICATED,
        mirror(topics="(?P<name>dcdrill-.*)"),
        "'(?P<' (a named group: Java writes (?<name>...)) is Python's syntax",
    ),
    ("secured to open", REPLICATED, second(tls=False, sasl=False), "east has tls, sasl and west has neither"),
    (
        "the workload as MM2",
        REPLICATED,
        second(sasl={"client": MIRROR_USER}),
        f"dcdrill:clusters[1].sasl.client: '{MIRROR_USER}' is MirrorMaker 2's user",
    ),
    (
        "broker ids into the controllers'",
        REPLICATED,
        brokers_everywhere,
        "1024 brokers in all; broker ids must stay below 1000",
    ),
    (
        "one DC pair linked twice",
        REPLICATED,
        lambda c: c["config"].update(
            {
                "dcdrill:lab": {
                    "links": [
                        {"between": ["dc-a", "dc-b"], "latencyMs": 3},
                        {"between": ["dc-b", "dc-a"], "latencyMs": 9},
                    ]
                }
            }
        ),
        "dcdrill:lab.links[1]: dc-b and dc-a are linked already by dcdrill:lab.links[0]",
    ),
    (
        "unknown cluster",
        REPLICATED,
        mirror(target="north"),
        "[mirror-unknown-cluster] dcdrill:mirrors[0] (east->north): unknown cluster 'north'",
    ),
    ("same cluster", REPLICATED, mirror(target="east"), "[mirror-same-cluster]"),
    (
        "remote factor below the target's",
        REPLICATED,
        mirror(replicationFactor=1),
        "[mirror-remote-factor] dcdrill:mirrors[0] (east->west): remote topics in west get replicationFactor 1",
    ),
    (
        "offset syncs away from MM2",
        REPLICATED,
        mirror(offsetSyncsTopicLocation="source"),
        "[mirror-offset-syncs-location]",
    ),
    ("identity with active-active", AA, mirror(replicationPolicy="identity"), "[mirror-identity-active-active]"),
    (
        "refresh longer than a drill",
        REPLICATED,
        mirror(refreshTopicsIntervalS=600),
        "[mirror-refresh-interval] dcdrill:mirrors[0] (east->west): refreshTopicsIntervalS 600 > 30",
    ),
    (
        "group refresh longer than a drill",
        REPLICATED,
        mirror(refreshGroupsIntervalS=600),
        "refreshGroupsIntervalS 600 > 30",
    ),
    (
        "failed-over consumers may not read the copy",
        REPLICATED,
        acls_without_remote,
        "[mirror-workload-acls] dcdrill:mirrors[0] (east->west): west's ACLs do not let workload read",
    ),
    (
        "a DC in two clusters",
        REPLICATED,
        second(datacenters=[{"name": "dc-a", "brokers": 2, "controllers": 1}]),
        "DC dc-a is in both east and west",
    ),
    ("two clusters of one name", REPLICATED, second(name="east"), "cluster names must be unique; repeated: east"),
    (
        "cluster and clusters",
        REPLICATED,
        lambda c: c["config"].update({"dcdrill:cluster": c["config"]["dcdrill:clusters"][0]}),
        "not both",
    ),
    (
        "mirrors without clusters",
        yaml.safe_load((ROOT / "Pulumi.local.yaml").read_text()),
        lambda c: c["config"].update({"dcdrill:mirrors": [{"source": "a", "target": "b"}]}),
        "a stack with one dcdrill:cluster mirrors nothing",
    ),
    (
        "bad topic regex",
        REPLICATED,
        mirror(topics="dcdrill-("),
        "[mirror-topics-regex] dcdrill:mirrors[0] (east->west): topics 'dcdrill-(' is not a regex MM2 can compile "
        "(Java's java.util.regex.Pattern): Unclosed group",
    ),
    (
        "a regex Python reads and Java refuses",
        REPLICATED,
        mirror(topics="dcdrill-a{"),
        "is not a regex MM2 can compile (Java's java.util.regex.Pattern): Illegal repetition",
    ),
    (
        "misspelled mirror key",
        REPLICATED,
        mirror(placment="target"),
        "dcdrill:mirrors[0].placment: unknown key; did you mean 'placement'",
    ),
    (
        "unknown placement",
        REPLICATED,
        mirror(placement="cloud"),
        "dcdrill:mirrors[0].placement: Input should be 'target' or 'source'",
    ),
]


@pytest.mark.parametrize("case,base,change,expected", BAD, ids=[b[0] for b in BAD])
def test_every_bad_replicated_stack_exits_2_naming_its_rule(case, base, change, expected, stack_dir, capsys):
    cfg = copy.deepcopy(base)
    change(cfg)
    (stack_dir / "Pulumi.bad.yaml").write_text(yaml.safe_dump(cfg))
    assert cli.main(["plan", "--stack", "bad"]) == 2, case
    out = capsys.readouterr()
    assert expected in out.out + out.err, (case, out.out + out.err)
    assert "Traceback" not in out.err


def test_a_regex_java_reads_and_python_refuses_is_accepted(stack_dir, capsys):
    """Java's named group: MM2 compiles it; Python's re would call it an error."""
    cfg = copy.deepcopy(REPLICATED)
    mirror(topics="dcdrill-(?<kind>[a-z]+)")(cfg)
    (stack_dir / "Pulumi.bad.yaml").write_text(yaml.safe_dump(cfg))
    assert cli.main(["plan", "--stack", "bad"]) == 0, capsys.readouterr()


def test_the_shipped_replicated_stacks_plan_clean_with_predictions_per_flow(capsys):
    assert cli.main(["plan", "--stack", "local-replicated"]) == 0
    out = capsys.readouterr().out
    assert "mirror east->west: MirrorMaker 2 (active-passive) on mm1.dc-b.lab (target DC)" in out
    assert (
        "east->west   source-dc-loss  source writes STOP      target writable yes  "
        "acked records missing from the target POSSIBLE" in out
    )
    assert (
        "east->west   link-cut        source writes continue  target writable yes  "
        "acked records missing from the target impossible" in out
    )
    assert cli.main(["plan", "--stack", "local-replicated-aa"]) == 0
    assert "west->east   source-dc-loss" in capsys.readouterr().out


@pytest.mark.parametrize(
    "to,expected",
    [
        ("north", "failover to unknown cluster 'north'; valid: east, west"),
        ("east", "[mirror-failover-target] failover to east, which no mirror copies into"),
    ],
)
def test_a_failover_nowhere_is_refused_before_the_drill(to, expected, capsys):
    assert cli.main(["drill", "--stack", "local-replicated", "--failover-to", to, "--check"]) == 2
    assert expected in capsys.readouterr().err


def test_a_failover_without_offset_sync_is_refused(stack_dir, capsys):
    cfg = copy.deepcopy(REPLICATED)
    mirror(syncGroupOffsets=False)(cfg)
    (stack_dir / "Pulumi.bad.yaml").write_text(yaml.safe_dump(cfg))
    assert cli.main(["plan", "--stack", "bad"]) == 0  # nothing wrong until a drill fails consumers over
    assert cli.main(["drill", "--stack", "bad", "--check"]) == 2
    assert "[mirror-offset-sync-off] east->west has syncGroupOffsets false" in capsys.readouterr().err


def test_replicated_experiments_refuse_a_stretched_stack(capsys):
    for name in ("kill-source-dc", "cut-mirror-link", "kill-mirror"):
        assert cli.main(["drill", "--stack", "local", "--experiment", name, "--check"]) == 2
        assert "drills a replicated stack" in capsys.readouterr().err
    assert cli.main(["drill", "--stack", "local-replicated", "--check"]) == 0  # its default: kill-source-dc
    assert "kill-source-dc can run on stack local-replicated" in capsys.readouterr().out
