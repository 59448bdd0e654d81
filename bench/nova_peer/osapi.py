"""nova-api's WSGI application for gunicorn. Nova parses ``sys.argv`` as its own options,
so gunicorn's command line is hidden from it. Runs in Nova's venv."""

import sys

sys.argv = ["nova-api-os-compute"]

from nova.wsgi.osapi_compute import application  # noqa: E402

__all__ = ["application"]
