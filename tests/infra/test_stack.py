"""A stack file read (infra/stack.py load_config): what is not a stack file exits 2 naming the
file and, for YAML, the line; never a traceback."""

import pytest

from dcdrill import cli


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
