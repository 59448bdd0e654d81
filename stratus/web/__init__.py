"""Small HTTP pieces shared by Stratus's WSGI apps (Placement API and compute API)."""
