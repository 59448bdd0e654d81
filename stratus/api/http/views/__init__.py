"""Response bodies of the compute API, one module per noun, per microversion.

A view is a plain function of the request (for ``req.want``, ``req.is_admin`` and the
links' base URL) and the records it shows; it reads no database. What a view needs
beyond its record (a server's addresses, its host's status) the handler gathers and
passes in. Every branch on the version asks ``req.want.supports(<feature>)`` with a
feature of ``stratus.api.http.microversion.HISTORY``.
"""
