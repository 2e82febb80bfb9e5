"""Chaos Toolkit activities for a replicated stack's MirrorMaker 2 (probes.py, actions.py)."""
