"""junit.xml for CI: one test case per verdict rule, or one error when a drill stopped before it
had a verdict (exit 2, 3 or 4), so a pipeline always has a test report to publish.

The classname is `dcdrill.<stack>.<experiment>` and the test name is the rule, the same on every
run: CI tracks each rule of each drill over time. Written through junitparser, so any run name,
message or number is escaped.
"""

from __future__ import annotations

from junitparser import Error, Failure, JUnitXml, TestCase, TestSuite

SUITE = "dcdrill drill"
STOPPED = "drill"  # the test case of a drill that stopped before its verdict


def classname(stack: str | None, experiment: str | None) -> str:
    return f"dcdrill.{stack or 'unknown-stack'}.{experiment or 'unknown-experiment'}"


def verdict_xml(summary: dict, stack: str | None, experiment: str | None, seconds: float) -> str:
    """A test case per rule of the verdict (spark/verdict.py), failed where the drill broke it."""
    cases = []
    for r in summary["rules"]:
        case = TestCase(r["rule"], classname(stack, experiment), 0.0)
        if not r["passed"]:
            failure = Failure(r["message"], "rule")
            failure.text = readable(r)
            case.result = [failure]
        cases.append(case)
    return _document(cases, seconds)


def readable(rule: dict) -> str:
    """A failed rule as a person reads it in CI: the promise, what was measured, then each number."""
    lines = [f"promise: {rule['description']}", f"measured: {rule['message']}"]
    lines += [f"{key}: {value}" for key, value in sorted((rule.get("numbers") or {}).items())]
    return "\n".join(lines)


def error_xml(stack: str | None, experiment: str | None, exit_code: int, message: str, seconds: float) -> str:
    """One test case in error: the drill stopped with `exit_code` (dcdrill's exit codes) before a verdict."""
    case = TestCase(STOPPED, classname(stack, experiment), round(seconds, 3))  # the drill, until it stopped
    error = Error(message, f"exit {exit_code}")
    error.text = message
    case.result = [error]
    return _document([case], seconds)


def _document(cases: list[TestCase], seconds: float) -> str:
    suite = TestSuite(SUITE)
    for case in cases:
        suite.add_testcase(case)
    doc = JUnitXml()
    doc.add_testsuite(suite)
    doc.update_statistics()  # counts (and times, as sums of the cases': set after)
    suite.time = doc.time = round(seconds, 3)  # the drill's (or the verify's) own time
    text = doc.tostring()
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + (text.decode() if isinstance(text, bytes) else text) + "\n"
