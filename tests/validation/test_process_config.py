"""What a workload process is told (validation/process_config.ProcessConfig): the control, the
host's runner and the process hold it to one model."""

import json
import subprocess
import sys

import pytest

from dcdrill.validation import clients, host_process, process_config
from dcdrill.validation.process_config import ProcessConfig
from tests.process_configs import SPEC_KEYS
from tests.process_configs import process_config as config_for

RUNNER = [sys.executable, "-m", "dcdrill.validation.host_process"]


def test_the_model_holds_every_field_of_the_workload_spec():
    assert SPEC_KEYS <= set(ProcessConfig.model_fields)


@pytest.mark.parametrize(
    "change, named",
    [
        ({"rate": "200"}, "rate"),  # text where the control meant a number
        ({"rate": float("nan")}, "rate"),
        ({"acks": "-1"}, "acks"),
        ({"idempotence": "true"}, "idempotence"),
        ({"bootstrap": []}, "bootstrap"),
        ({"security": {"sasl_plain_password": "secret"}}, "security"),  # a password never travels here
        ({"retries": -1}, "retries"),
        ({"deadline_ms": None}, "deadline_ms"),
        ({"shell": "rm -rf /"}, "unknown key 'shell'"),
    ],
)
def test_a_config_the_model_refuses_names_its_key(change, named):
    with pytest.raises(ValueError, match=named):
        process_config.checked(config_for(**change), "p1's process config")
    with pytest.raises(ValueError, match=named):  # the process itself refuses it before it runs
        clients.become_agent(config_for(**change))


def test_the_hosts_runner_refuses_a_bad_config_before_it_starts_anything(tmp_path):
    request = dict(zip(host_process.REQUEST_FIELDS, ("producer", "p1", config_for(rate="fast"), "")))
    res = subprocess.run(
        [*RUNNER, str(tmp_path / "f")], input=json.dumps(request) + "\n", capture_output=True, text=True, timeout=60
    )
    assert (
        res.returncode == 2 and "p1's process config: rate: Input should be a valid number, got 'fast'" in res.stderr
    ), res.stderr
    assert not (tmp_path / "f" / "logs").exists()  # no process was started


@pytest.mark.parametrize("process", ["producer", "consumer"])
@pytest.mark.parametrize(
    "text, named", [("{not json", "Expecting property name"), (json.dumps(config_for(rate=0)), "rate")]
)
def test_a_workload_process_given_a_bad_config_exits_2_naming_it(process, text, named):
    res = subprocess.run(
        [sys.executable, "-m", f"dcdrill.validation.{process}", "--config", text],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and "--config: " in res.stderr and named in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
