"""The local lab: network namespaces grouped into DCs, joined by a router namespace."""
