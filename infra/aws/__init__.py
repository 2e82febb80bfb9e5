"""The AWS program: one ComponentResource per concern, all driven by the topology model."""
