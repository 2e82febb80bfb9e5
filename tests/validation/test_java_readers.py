"""The Java readers' settings (validation/java_readers.py): after transactions, the audit and the
consumers read committed records only."""

from dcdrill.validation import java_readers
from tests.validation.test_java_client import java_cfg


def test_the_audit_reads_committed_records_only_after_transactions():
    cfg = java_cfg(transaction_size=100)
    assert java_readers.audit_properties(cfg)["isolation.level"] == "read_committed"
    assert java_readers.audit_properties(java_cfg())["isolation.level"] == "read_uncommitted"
    assert "group.id" not in java_readers.audit_properties(cfg)
