"""The stacks (infra/stack.py): the shipped ones parse to their documented shape, and what is not a
stack file exits 2 naming the file and, for YAML, the line; never a traceback."""

from pathlib import Path

import pytest
import yaml

from dcdrill import cli
from dcdrill.infra import stack
from dcdrill.infra.topology import ConfigError, from_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("config: [1, 2]\n", "must be a mapping with a config: mapping inside"),
        ("- 1\n", "must be a mapping with a config: mapping inside"),
        ("config:\n  dcdrill:cluster: {datacenters: [\n", "Pulumi.bad.yaml:3: not valid YAML"),
        ("config:\n\tdcdrill:backend: local\n", "Pulumi.bad.yaml:2: not valid YAML"),
        (
            "a: &a [x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefghijklmno", "bcdefghijklmnop")
            ),
            "more than 100 YAML aliases",
        ),
    ],
)
def test_an_unreadable_stack_file_exits_2_naming_file_and_line(text, expected, stack_dir, capsys):
    (stack_dir / "Pulumi.bad.yaml").write_text(text)
    assert cli.main(["plan", "--stack", "bad"]) == 2
    assert expected in capsys.readouterr().err


def test_binary_stack_file(stack_dir, capsys):
    (stack_dir / "Pulumi.bad.yaml").write_bytes(b"config:\n  x: \xff\xfe\n")
    assert cli.main(["plan", "--stack", "bad"]) == 2
    assert "not UTF-8 text" in capsys.readouterr().err


def test_stack_parsing_and_lab_defaults():
    assert set(stack.stack_names()) >= {"local", "local-3dc"}
    t = stack.load("local")
    assert (t.backend, t.profile, t.acks) == ("local", "consistency-first", "all")
    assert [(d.name, d.brokers, d.zookeepers) for d in t.datacenters] == [
        ("dc-a", 2, 1),
        ("dc-b", 2, 1),
        ("dc-c", 0, 1),
    ]
    assert stack.backend("local").settings.latency_ms == 5
    with pytest.raises(stack.UnknownStack, match="valid: .*local"):
        stack.load("nope")
    with pytest.raises(ConfigError, match=r"datacenters\[0\]\.brokers: Input should be a valid integer \(got 'two'\)"):
        from_config({"dcdrill:cluster": {"datacenters": [{"name": "a", "brokers": "two"}]}})


def test_stack_files_are_valid_yaml_with_the_documented_shape():
    for name in stack.stack_names():
        cfg = yaml.safe_load((ROOT / f"Pulumi.{name}.yaml").read_text())["config"]
        assert cfg["dcdrill:backend"] in ("local", "aws")
        clusters = [cfg["dcdrill:cluster"]] if "dcdrill:cluster" in cfg else cfg["dcdrill:clusters"]
        assert all("datacenters" in c for c in clusters)
