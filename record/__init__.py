"""The drill record (RECORD.md): one directory per drill. `RecordReader` reads it (the verifier in
spark/, the history, the completeness checks); `DrillRecord` adds the writers of the workload
(validation/), the faults and the drill (chaos/). `record.models` holds each file's model;
`record.contents` names the files and parses them; `record.ledger` is the crash-safe JSON Lines
writer and reader; `record.files` is where a record's bytes live (a local folder, or a Hadoop URI
for the verifier)."""

from dcdrill.record.contents import LEDGERS, BadRecord, merge_faults, parse_faults
from dcdrill.record.drill_record import DrillRecord
from dcdrill.record.reader import RecordReader

__all__ = ["LEDGERS", "BadRecord", "DrillRecord", "RecordReader", "merge_faults", "parse_faults"]
