"""dcdrill: multi-datacenter Kafka drills. This package is the `dcdrill` command itself, the
composition root that puts the layers below it together (pyproject.toml [tool.importlinter])."""
