"""A Keystone v3 compatible identity service: users, projects, roles, tokens, catalog."""
