"""``stratus``: run Stratus services.

Subcommands: ``serve`` (everything in one process on SQLite) and
``placement-api`` (the Placement API on a production server, any database).
"""

from __future__ import annotations

import argparse
import sys

from stratus import __version__
from stratus import config as configuration
from stratus.cli import (
    api_cmd,
    catalog_cmd,
    client,
    common,
    compute_cmd,
    conductor_cmd,
    network_cmd,
    scheduler_cmd,
    serve,
    zone_cmd,
)


def build_parser() -> argparse.ArgumentParser:
    parser = common.ArgumentParser(
        prog="stratus",
        description="Stratus: placement, scheduling and compute plane for a cloud.",
        epilog=configuration.describe_options(),
        formatter_class=common.HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"stratus {__version__}")
    common.add_traceback_flag(parser)
    common.add_leading_config_args(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve.add_commands(sub)
    compute_cmd.add_commands(sub)
    scheduler_cmd.add_commands(sub)
    conductor_cmd.add_commands(sub)
    api_cmd.add_commands(sub)
    network_cmd.add_commands(sub)
    catalog_cmd.add_commands(sub)
    zone_cmd.add_commands(sub)
    client.add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    common.merge_leading_config_args(args)
    if not getattr(args, "func", None):
        # Nothing to do: what there is, briefly, and exit as argparse does on a usage
        # mistake (2). The full --help lists every configuration option as well.
        print(common.short_help(common.chosen_parser(parser, args)), file=sys.stderr)
        raise SystemExit(common.USAGE_ERROR)
    common.run(lambda: args.func(args), args)


if __name__ == "__main__":
    main()
