"""What every Stratus command shares: config flags, one-line errors, logging."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from stratus import config as configuration


def add_config_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config-file", action="append", default=[], metavar="PATH",
        help="INI configuration file (placement.conf syntax); may be repeated.",
    )
    parser.add_argument("--data-dir", metavar="DIR",
                        help="directory for SQLite files (default ./data or $STRATUS_DATA_DIR)")
    parser.add_argument("--debug", action="store_true", default=None, help="log at debug level")


def load_config(
    args: argparse.Namespace, extra: dict[tuple[str, str], Any] | None = None
) -> configuration.Config:
    overrides: dict[tuple[str, str], Any] = {
        ("DEFAULT", "data_dir"): getattr(args, "data_dir", None),
        ("DEFAULT", "debug"): getattr(args, "debug", None),
    }
    overrides.update(extra or {})
    return configuration.load(args.config_file, overrides=overrides)


def fail(message: str, code: int = 1) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(code)


def setup_logging(debug: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def run(main: Callable[[], int | None]) -> NoReturn:
    """Run a command; turn expected failures into one line and a non-zero exit."""
    try:
        code = main() or 0
    except configuration.ConfigError as exc:
        fail(str(exc), 2)
    except KeyboardInterrupt:
        code = 130
    raise SystemExit(code)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    pass
