"""The record's small files parsed (record/contents.py): a bad line is named by file and line."""

import pytest


@pytest.mark.parametrize(
    "line,expected",
    [
        ('{"group": "g", "from": "east", "to": "west"}', "failovers.jsonl:2: at_ms must be an integer, got nothing"),
        ('{"group": "g", "from": "east", "to": 3, "at_ms": 5}', "failovers.jsonl:2: to must be a string, got 3"),
        ("[1]", "failovers.jsonl:2: a failover must be a JSON object"),
        ('{"group": ', "failovers.jsonl:2"),
    ],
)
def test_a_bad_failover_line_is_named_by_file_and_line(line, expected):
    from dcdrill.record.contents import parse_failovers

    good = '{"group": "g", "from": "east", "to": "west", "at_ms": 5}\n'
    with pytest.raises(ValueError, match=None) as exc:
        parse_failovers((good + line + "\n" + good).encode(), "failovers.jsonl")
    assert expected in str(exc.value)
    assert [r["to"] for r in parse_failovers(good.encode(), "failovers.jsonl")] == ["west"]
