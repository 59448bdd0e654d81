"""Glance's metadata definitions catalog ("metadefs"): namespaces of property, object and
tag definitions that say what image, flavor or volume metadata a cloud understands, and
which resource types each namespace applies to. Stored and served; nothing in Stratus
enforces them (in Glance, nothing does either: they describe, for UIs and operators)."""
