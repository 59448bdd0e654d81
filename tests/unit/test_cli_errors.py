"""The commands' top-level error handler (stratus.cli.common.run): one line, an exit
status, and the traceback only when asked for."""

from __future__ import annotations

import argparse

import pytest
import sqlalchemy as sa

from stratus.cli import common


def exit_code(func, args=None) -> int:
    with pytest.raises(SystemExit) as exited:
        common.run(func, args)
    return int(exited.value.code or 0)


def boom() -> int:
    raise ValueError("the unexpected\nhappened")


def test_an_unexpected_error_is_one_line_naming_it(capsys, monkeypatch):
    monkeypatch.delenv("STRATUS_DEBUG", raising=False)
    assert exit_code(boom) == 1
    err = capsys.readouterr().err
    assert err == ("error: unexpected ValueError: the unexpected happened "
                   "(--debug or STRATUS_DEBUG=1 shows the traceback)\n")


def test_debug_lets_the_traceback_through(monkeypatch):
    monkeypatch.setenv("STRATUS_DEBUG", "1")
    with pytest.raises(ValueError):
        common.run(boom)
    monkeypatch.delenv("STRATUS_DEBUG")
    with pytest.raises(ValueError):
        common.run(boom, argparse.Namespace(show_traceback=True))


def test_a_missing_table_says_what_to_run(capsys, monkeypatch):
    monkeypatch.delenv("STRATUS_DEBUG", raising=False)
    engine = sa.create_engine("sqlite://")

    def read() -> int:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT * FROM inventories")
        return 0

    assert exit_code(read) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert "no such table: inventories" in line and "db sync" in line
    assert "--data-dir" in line and "Traceback" not in line


def test_a_closed_pipe_ends_quietly(capsys):
    def write() -> int:
        raise BrokenPipeError(32, "Broken pipe")

    assert exit_code(write) == common.BROKEN_PIPE_EXIT
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(("text", "why"), [
    ("-1", "must be a number of seconds above 0"),
    ("0", "must be a number of seconds above 0"),
    ("nan", "must be a number of seconds above 0"),
    ("inf", "must be a number of seconds above 0"),
    ("soon", "not a number of seconds"),
])
def test_a_time_limit_must_be_seconds_above_zero(text, why):
    with pytest.raises(argparse.ArgumentTypeError, match=why):
        common.positive_seconds(text)
    assert common.positive_seconds("2.5") == 2.5


@pytest.mark.parametrize("argv", [
    ["server", "create", "vm", "--flavor", "f", "--wait", "--timeout", "-1"],
    ["server", "resize", "vm", "--flavor", "f", "--timeout", "-1"],
    ["server", "resize-confirm", "vm", "--wait", "--timeout", "-1"],
])
def test_client_commands_refuse_a_negative_timeout(argv, capsys):
    from stratus.cli.main import build_parser

    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(argv)
    assert exited.value.code == common.USAGE_ERROR
    assert "argument --timeout: invalid value -1: must be a number of seconds above 0" in \
        capsys.readouterr().err


def test_a_service_that_stopped_answering_is_one_line(capsys, monkeypatch):
    import httpx

    monkeypatch.delenv("STRATUS_DEBUG", raising=False)

    def refused() -> int:
        raise httpx.ConnectError("GET /resource_providers: connection refused")

    assert exit_code(refused) == 1
    assert capsys.readouterr().err == ("error: cannot reach a service: ConnectError: GET "
                                       "/resource_providers: connection refused\n")
