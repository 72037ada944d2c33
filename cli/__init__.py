"""rafka."""
