"""The compute REST API (Nova's API for the parts Stratus has): WSGI app, routes, handlers."""
