"""A Glance v2 compatible image registry: images, their properties and small data."""
