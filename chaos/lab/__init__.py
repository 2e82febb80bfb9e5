"""The lab driver: faults on the netns lab (processes and the router)."""
