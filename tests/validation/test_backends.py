"""The producers' client settings (validation/backends.py)."""


def _producer_cfg(**spec):
    from tests.process_configs import process_config

    return process_config(producer_id="p1", **spec)


def test_librdkafka_keeps_its_own_batch_size_unless_one_is_given():
    """librdkafka sends one partition's batch per request: Java's 16384 there gave the workload a
    third of its records/s (docs/benchmarks.md, workload_vs_perftest.py). librdkafka takes both."""
    from confluent_kafka import Producer

    from dcdrill.validation.backends import librdkafka_settings

    default, given = librdkafka_settings(_producer_cfg()), librdkafka_settings(_producer_cfg(batch_size=65536))
    assert "batch.size" not in default and given["batch.size"] == 65536
    assert default["linger.ms"] == 5 and default["acks"] == "all" and default["max.in.flight"] == 5
    for settings in (default, given):
        Producer(settings).flush(0)  # an unknown or ill-typed key is refused here
