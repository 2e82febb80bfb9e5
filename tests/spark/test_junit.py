"""junit.xml: valid for any names, a stable classname per stack and experiment, a time, and an
error case for a drill that stopped before its verdict."""

import xml.etree.ElementTree as ET

import pytest

from dcdrill.spark import junit

RULES = [
    {
        "rule": "no-acked-loss",
        "passed": False,
        "message": 'acked_lost = 3 (allowed 0) <"x" & y>',
        "description": "acked_lost = 0: consistency-first loses no acknowledged record",
        "numbers": {"acked_lost": 3, "allowed": 0},
    },
    {
        "rule": "no-phantoms",
        "passed": True,
        "message": "phantoms = 0",
        "description": "phantoms = 0",
        "numbers": {"phantoms": 0},
    },
]


def test_verdict_cases_are_valid_xml_with_a_stable_classname_and_a_time():
    text = junit.verdict_xml({"rules": RULES, "run": 'odd "run" <name> & more'}, 'local"x', "kill-dc", 12.5)
    root = ET.fromstring(text)
    suite = root.find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1" and float(suite.get("time")) == 12.5
    cases = suite.findall("testcase")
    assert [c.get("classname") for c in cases] == ['dcdrill.local"x.kill-dc'] * 2
    assert [c.get("name") for c in cases] == ["no-acked-loss", "no-phantoms"]
    failure = cases[0].find("failure")
    assert failure.get("message") == RULES[0]["message"]
    # a body a person reads in CI, not a Python dict
    assert failure.text == (
        "promise: acked_lost = 0: consistency-first loses no acknowledged record\n"
        'measured: acked_lost = 3 (allowed 0) <"x" & y>\nacked_lost: 3\nallowed: 0'
    )
    assert cases[1].find("failure") is None
    # the same drill on another day: the same classname and names, so CI tracks each rule
    again = ET.fromstring(junit.verdict_xml({"rules": RULES, "run": "another-run"}, 'local"x', "kill-dc", 3.0))
    assert [(c.get("classname"), c.get("name")) for c in again.iter("testcase")] == [
        (c.get("classname"), c.get("name")) for c in cases
    ]


@pytest.mark.parametrize("code", [2, 3, 4])
def test_a_stopped_drill_is_one_case_in_error(code):
    root = ET.fromstring(junit.error_xml("local", None, code, "steady state not met <before> the fault", 40.0))
    suite = root.find("testsuite")
    assert suite.get("errors") == "1" and suite.get("failures") == "0"
    [case] = suite.findall("testcase")
    assert (case.get("classname"), case.get("name")) == ("dcdrill.local.unknown-experiment", junit.STOPPED)
    error = case.find("error")
    assert error.get("type") == f"exit {code}" and error.get("message") == "steady state not met <before> the fault"
    assert error.text == "steady state not met <before> the fault" and float(case.get("time")) == 40.0
