"""Stratus: an open control plane for placing compute workloads."""

__version__ = "0.1.0"
