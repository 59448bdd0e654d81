"""The operators' console: a read-only web page (``/console``) and its data
(``/console/data``), served by the compute API. The page is plain HTML, CSS and
JavaScript shipped in ``static/`` (no build step, nothing fetched from elsewhere)."""
