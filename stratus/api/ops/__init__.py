"""The compute API's operations that span more than one database transaction: across
cells, over the bus (computes, the conductor) and over HTTP (Placement).

Each is a plain function of :class:`~stratus.api.deps.ComputeAPIDeps` and parsed
input, raising the typed errors of :mod:`stratus.api.store.errors`; the HTTP
handlers parse, authorize, call one of these (or one store function) and render.
"""
