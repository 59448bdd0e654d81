"""``stratus-manage identity``: the identity database's first users, projects and roles
(what ``keystone-manage bootstrap`` and ``openstack user/project/role`` do), working on the
database directly, so it works before any identity API runs."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from stratus.cli import common


def add_commands(top: Any) -> None:
    area = common.add_parser(top, "identity", help="identity users, projects and roles",
                             description="The identity database ([identity_database] "
                             "connection): bootstrap it, add users, projects and role "
                             "assignments, list them.", options=False)
    sub = area.add_subparsers(dest="action", metavar="ACTION")

    def leaf(name: str, func: Any, text: str) -> argparse.ArgumentParser:
        p = common.add_parser(sub, name, help=text, description=text[0].upper() + text[1:]
                              + ". Migrates the identity database first (safe to repeat).")
        common.add_config_args(p)
        p.add_argument("--db", metavar="URL", help="identity database URL (overrides "
                       "[identity_database] connection)")
        p.set_defaults(func=func)
        return p

    p = leaf("bootstrap", cmd_bootstrap, "make the token keys, the admin, member, reader and "
             "service roles, the admin user and project, and optionally a demo user and "
             "project and a service user (idempotent; a changed password is set anew)")
    p.add_argument("--admin-password", metavar="PW",
                   help="the admin's password (default: $STRATUS_ADMIN_PASSWORD)")
    p.add_argument("--demo-password", metavar="PW", help="also a demo user and project")
    p.add_argument("--service-password", metavar="PW",
                   help="also a 'stratus' service user in project 'service' (for "
                   "keystonemiddleware's [keystone_authtoken] of the other APIs)")
    p = leaf("project-create", cmd_project_create, "create a project")
    p.add_argument("name")
    p.add_argument("--description", default="")
    p = leaf("user-create", cmd_user_create, "create a user, with a role on a project")
    p.add_argument("name")
    p.add_argument("--password", help="the password (default: $STRATUS_USER_PASSWORD)")
    p.add_argument("--project", required=True, help="its default project (name or id)")
    p.add_argument("--role", default="member", help="its role there (default member)")
    p = leaf("role-add", cmd_role_add, "give a user a role on a project")
    p.add_argument("role")
    p.add_argument("--user", required=True, help="name or id")
    p.add_argument("--project", required=True, help="name or id")
    p = leaf("list", cmd_list, "list users with their projects and roles (reads only)")
    p.add_argument("--json", action="store_true", help="print JSON")


def _engine(args: argparse.Namespace, create: bool = True) -> Any:
    """The identity database, migrated; ``create=False`` (read-only commands) makes
    nothing where there is none and says so."""
    from stratus.identity import service

    config = common.load_config(args, {("identity_database", "connection"): args.db})
    if not create:
        engine = common.connect(service.db_url(config), 5.0, "identity",
                                sync_command="stratus-manage identity bootstrap")
        return config, engine
    common.make_data_dir(service.db_url(config), config.data_dir)
    engine = common.connect(service.db_url(config), 5.0, "identity", create=True)  # synced
    try:
        service.sync(engine)
    except Exception as exc:
        engine.dispose()
        common.fail(f"cannot migrate the identity database: {common.db_error(exc)}")
    return config, engine


def _password(given: str | None, variable: str, what: str) -> str:
    password = given or os.environ.get(variable)
    if not password:
        common.fail(f"{what} needs a password: --{what.split()[0]}-password or ${variable}",
                    common.USAGE_ERROR)
    assert password is not None
    return password


def cmd_bootstrap(args: argparse.Namespace) -> int:
    from stratus.identity import service, store
    from stratus.identity.tokens import make_key_file
    from stratus.storage import engine as db

    admin = _password(args.admin_password, "STRATUS_ADMIN_PASSWORD", "admin user")
    config, engine = _engine(args)
    try:
        make_key_file(service.key_file(config))
        with db.write(engine) as conn:
            made = store.bootstrap(conn, admin, demo_password=args.demo_password,
                                   service_password=args.service_password)
    finally:
        engine.dispose()
    for key, value in sorted(made.items()):
        print(f"{key} {value}")
    print(f"token keys in {service.key_file(config)}")
    return 0


def _found(value: Any, what: str, key: str) -> Any:
    if value is None:
        common.fail(f"no {what} named {key!r}", common.RUNTIME_ERROR)
    return value


def cmd_project_create(args: argparse.Namespace) -> int:
    from stratus.identity import store
    from stratus.storage import engine as db

    _, engine = _engine(args)
    try:
        with db.write(engine) as conn:
            project = store.create_project(conn, args.name, args.description)
    except store.IdentityConflict as exc:
        common.fail(str(exc))
    finally:
        engine.dispose()
    print(project.id)
    return 0


def cmd_user_create(args: argparse.Namespace) -> int:
    from stratus.identity import store
    from stratus.storage import engine as db

    password = _password(args.password, "STRATUS_USER_PASSWORD", "user")
    _, engine = _engine(args)
    try:
        with db.write(engine) as conn:
            project = _found(store.find_project(conn, args.project), "project", args.project)
            role = store.ensure_role(conn, args.role)
            user = store.create_user(conn, args.name, password, project.id)
            store.grant(conn, user.id, project.id, role.id)
    except store.IdentityConflict as exc:
        common.fail(str(exc))
    finally:
        engine.dispose()
    print(user.id)
    return 0


def cmd_role_add(args: argparse.Namespace) -> int:
    from stratus.identity import store
    from stratus.storage import engine as db

    _, engine = _engine(args)
    try:
        with db.write(engine) as conn:
            user = _found(store.find_user(conn, args.user), "user", args.user)
            project = _found(store.find_project(conn, args.project), "project", args.project)
            role = store.ensure_role(conn, args.role)
            store.grant(conn, user.id, project.id, role.id)
    finally:
        engine.dispose()
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from stratus.identity import store
    from stratus.storage import engine as db

    _, engine = _engine(args, create=False)
    try:
        with db.read(engine) as conn:
            projects = {p.id: p.name for p in store.list_projects(conn)}
            roles = {r.id: r.name for r in store.list_roles(conn)}
            rows = [{"user": u.name, "id": u.id, "enabled": u.enabled, "roles": sorted(
                f"{roles[r]}@{projects[p]}" for _, p, r in
                store.list_assignments(conn, user_id=u.id))} for u in store.list_users(conn)]
    finally:
        engine.dispose()
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    else:
        for row in rows:
            print(f"{row['user']:<20} {row['id']}  {', '.join(row['roles']) or '-'}")
    return 0
