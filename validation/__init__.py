"""The workload (Jepsen's "client + generator"): sequenced producers, a live consumer group and
a final audit, each writing a crash-safe JSON Lines ledger into the drill record (RECORD.md)."""
