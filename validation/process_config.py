"""What a workload process is told (RECORD.md: agents): one model, checked by the control that
writes it (workload._process_config), by the host's runner that passes it on
(host_process.run) and by the process that reads it (clients.become_agent). It crosses host
access as JSON: the types a process reads are the ones the control meant, never re-parsed text.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from dcdrill.record.models import validated

Count = Annotated[int, Field(ge=0)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class Security(BaseModel):
    """client_security's keys, as infra/inventory.process_security leaves them: the password, if
    any, comes on the process's stdin (sasl_password_stdin), never in this config."""

    model_config = ConfigDict(extra="forbid", strict=True)

    security_protocol: Literal["SSL", "SASL_SSL"] | None = None
    ssl_cafile: str | None = None
    ssl_cadata: str | None = None
    ssl_check_hostname: bool | None = None
    sasl_mechanism: str | None = None
    sasl_plain_username: str | None = None
    sasl_plain_password: None = None
    sasl_password_stdin: bool | None = None


class ProcessConfig(BaseModel):
    """validation/workload.WorkloadSpec's fields (a test holds them equal), then what the control
    adds for the one process, then the runner's run_dir and parent_pid."""

    model_config = ConfigDict(extra="forbid", strict=True)

    # WorkloadSpec
    topic: str
    producers: Count
    consumers: Count
    rate: Positive | None
    duration_s: Positive | None
    count: Annotated[int, Field(gt=0)] | None
    record_size: Annotated[int, Field(gt=0)]
    acks: Literal["0", "1", "all"]
    idempotence: bool | None
    retries: Count | None
    delivery_timeout_ms: Count | None
    request_timeout_ms: Count | None
    linger_ms: Count | None
    batch_size: Annotated[int, Field(gt=0)] | None
    max_in_flight: Annotated[int, Field(gt=0)] | None
    keys: Annotated[int, Field(gt=0)]
    group: str
    bootstrap_timeout_ms: Count
    hosts: list[str]
    client: Literal["confluent", "kafka-python", "java"]
    fetch_min_bytes: Count
    fetch_max_wait_ms: Count
    transaction_size: Annotated[int, Field(gt=0)] | None
    abort_fraction: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)]
    # the control's, for this process
    bootstrap: list[str] = Field(min_length=1)
    security: Security
    deadline_ms: Count
    agent_uid: Count | None
    agent_gid: Count | None
    dc: str | None = None
    host: str | None = None
    producer_id: str | None = None
    consumer_id: str | None = None
    cluster: str | None = None
    auto_offset_reset: Literal["earliest", "none"] | None = None
    audit_timeout_s: Positive | None = None
    topics: list[str] | None = None
    kafka_libs: str | None = None  # the host's Kafka jars (the java client's classpath)
    # the host's runner's
    run_dir: str | None = None
    parent_pid: Count | None = None


def checked(config: dict, where: str) -> dict:
    """`config` itself once ProcessConfig holds it; a ValueError naming `where` and the key."""
    return validated(ProcessConfig, config, where)
