"""The compute API's reads and writes: plain functions over a connection to the API
database (flavors, server groups, aggregates, mappings, build requests) or to one cell
database (instances, services, compute nodes). ``cells.py`` runs the cell-wide ones
over every cell."""
