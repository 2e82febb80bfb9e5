"""dcdrill infrastructure: the topology model (the one source of truth) and the Pulumi programs."""
