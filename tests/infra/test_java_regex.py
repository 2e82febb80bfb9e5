"""MirrorMaker 2's topic regexes checked by Java's rules (infra/java_regex.py), with the
machine's JDK; Python's rules when no JDK answers."""

from dcdrill.infra import java_regex


def test_java_refuses_what_python_reads_and_reads_what_python_refuses():
    got = java_regex.problems(["a{", "(?<name>orders)", "orders\\..*"])
    assert set(got) == {"a{"}, got  # Java's named group is fine; `a{` is a literal only to Python
    assert "Illegal repetition" in got["a{"], got


def test_without_a_jdk_python_rules_and_says_so(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    java_regex._java_verdicts.cache_clear()
    try:
        got = java_regex.problems(["(?<name>orders)", "orders.*"])
    finally:
        java_regex._java_verdicts.cache_clear()
    assert list(got) == ["(?<name>orders)"] and got["(?<name>orders)"].endswith("(Python's rules: no JDK answered)")
