"""``stratus serve``: every role of Stratus in one process, on SQLite, with simulated hosts.

- :mod:`.topology`: which hosts in which cells (``--hosts/--cells`` or a fleet file),
  remembered in the data directory.
- :mod:`.layout`: the data directory's databases and the cell mappings.
- :mod:`.seed`: the first resource-tracker pass of many hosts in bulk.
- :mod:`.computes`: compute services many to a process (shared heartbeats).
- :mod:`.http`: the HTTP APIs on uvicorn threads.
- :mod:`.cloud`: :class:`~stratus.allinone.cloud.AllInOne`, the assembly and its stop.
"""
