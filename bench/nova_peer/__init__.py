"""Real Nova 34.0.0 and Placement 16.0.0 (PyPI) on this machine, for side-by-side boots.

``NovaCloud`` stands up what ../shared/NOVA-PEER.md describes: its own virtualenv
(``$STRATUS_NOVA_VENV``, default ``~/.cache/stratus/nova-venv``), scratch MariaDB databases
and a RabbitMQ virtual host, Placement and nova-api under gunicorn (2 workers each),
nova-conductor (a super conductor and a cell conductor), nova-scheduler and one
nova-compute whose fake driver exposes every node (``driver.py``), as Ironic does. No
Keystone, Glance or Neutron: ``auth.py`` sets the headers keystonemiddleware would, and
``stub.py`` answers the image service's questions with one active image. The modules in
this package that Nova imports (``driver``, ``auth``, ``osapi``) run inside Nova's
virtualenv, not Stratus's.
"""
