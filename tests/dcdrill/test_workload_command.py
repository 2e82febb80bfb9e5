"""`dcdrill workload` (dcdrill/workload_command.py): its flags as the workload's spec, and the
refusals that need no lab."""

import pytest

from dcdrill import cli
from dcdrill.cli import build_parser
from dcdrill.workload_command import spec_from_args


def parsed(*flags):
    return build_parser().parse_args(["workload", "run", *flags])


def test_the_flags_become_the_spec_with_the_stacks_acks_where_none_is_given():
    spec = spec_from_args(parsed("--rate", "50", "--producers", "2", "--client", "kafka-python"), "all")
    assert (spec.rate, spec.producers, spec.client, spec.acks, spec.duration_s) == (
        50.0,
        2,
        "kafka-python",
        "all",
        60.0,
    )
    assert spec_from_args(parsed("--acks", "1"), "all").acks == "1"
    # --count instead of a duration; --rate 0 is as fast as possible
    counted = spec_from_args(parsed("--count", "1000", "--rate", "0"), "all")
    assert (counted.count, counted.duration_s, counted.rate) == (1000, None, None)


@pytest.mark.parametrize(
    "flags, says",
    [
        (["--rate", "-5"], "rate must be >= 0"),
        (["--rate", "nan"], "rate must be a finite number > 0, got nan"),
        (["--duration", "inf"], "duration_s must be a finite number > 0, got inf"),
        (["--record-size", "0"], "record_size must be a finite number > 0, got 0"),
        (["--producers", "0"], "producers must be a finite number > 0, got 0"),
    ],
)
def test_bad_flags_exit_2_naming_the_flag_before_the_lab_is_asked(flags, says, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DCDRILL_CACHE", str(tmp_path))  # no lab, no inventory here
    assert cli.main(["workload", "run", "--stack", "local", *flags]) == 2
    assert says in capsys.readouterr().err
