"""The verifier's options (spark/options.py), parsed the same by `dcdrill verify` and by
spark-submit's driver."""

import argparse

import pytest

from dcdrill.spark import options


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="verify")
    options.add_arguments(p)
    return p


def test_several_records_and_repeated_confs_in_order():
    args = parser().parse_args(["runs/a", "s3a://b/runs/c", "--conf", "k=v=w", "--conf", "x=", "--json"])
    assert args.run_dirs == ["runs/a", "s3a://b/runs/c"] and args.json and not args.quiet
    assert args.conf == [("k", "v=w"), ("x", "")]  # the value keeps its own '='


def test_a_conf_without_a_value_is_refused_naming_it():
    with pytest.raises(argparse.ArgumentTypeError, match="expected KEY=VALUE, got 'spark.master'"):
        options.conf_pair("spark.master")


def test_a_record_is_required(capsys):
    with pytest.raises(SystemExit) as exited:
        parser().parse_args(["--json"])
    assert exited.value.code == 2 and "the following arguments are required: RUN_DIR" in capsys.readouterr().err
