"""Response bodies of the compute API, one module per noun, per microversion.

A view is a plain function of the request (for ``req.want``, ``req.is_admin`` and the
links' base URL) and the records it shows; it reads no database. What a view needs
beyond its record (a server's addresses, its host's status) the handler gathers and
passes in. Every branch on the version asks ``req.want.supports(<feature>)`` with a
feature of ``stratus.api.http.microversion.HISTORY``; nothing else compares versions.

For a handler that answers with a server (show, ``PUT /servers/{id}``, rebuild):
``stratus.api.http.handlers.servers.shown(req, server)`` is the whole body at the
version asked (``shown_all`` for a list). The server view reads these ``Server``
attributes (``stratus.api.store.servers``), each defaulting to what a server that
never had it set shows: ``description``, ``locked_by``, ``locked_reason``, ``tags``,
``metadata``, ``hostname``, ``access_ip_v4``/``v6``, ``config_drive``, ``user_data``,
``reservation_id``, ``launch_index``, ``trusted_certs``, ``progress``, ``deleted_at``.
Whatever stores one of them fills it in ``stratus.api.store.servers._server``; the
views need no change.
"""
