"""The workload as Chaos Toolkit activities: start in the background, probe progress, stop, audit."""
