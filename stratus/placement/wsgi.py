"""WSGI entry point for external servers: ``gunicorn stratus.placement.wsgi:application``.

Reads ``$OS_PLACEMENT_CONFIG_DIR/placement.conf`` (default ``/etc/placement``)
and ``OS_<SECTION>__<OPTION>`` environment variables, as Placement does.
"""

from stratus.placement.service import config_from_env, make_app

application = make_app(config_from_env())
