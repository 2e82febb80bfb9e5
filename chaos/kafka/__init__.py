"""Kafka-aware probes and waits, from the cluster's own metadata and ZooKeeper's `srvr`."""
