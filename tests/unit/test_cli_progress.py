"""The --wait progress line (stratus.cli.progress): what it says and when it draws."""

from __future__ import annotations

import io

from stratus.cli.progress import Progress, count_states, describe


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_describe_counts_states_in_name_order_without_empty_ones():
    counts = count_states(["BUILD"] * 80 + ["ACTIVE"] * 312 + ["ERROR"] * 8)
    assert describe(counts) == "312 ACTIVE, 80 BUILD, 8 ERROR"
    assert describe({"ACTIVE": 2, "ERROR": 0}) == "2 ACTIVE"


def test_redraws_one_line_about_once_a_second_and_erases_it():
    out, clock = Terminal(), Clock()
    with Progress("waiting", stream=out, clock=clock) as progress:
        progress.tick(lambda: {"BUILD": 3})
        clock.now += 0.4
        progress.tick(lambda: {"ACTIVE": 1, "BUILD": 2})   # too soon: not drawn
        clock.now += 0.8
        progress.tick(lambda: {"ACTIVE": 3})
    assert out.getvalue() == ("\r\x1b[Kwaiting: 3 BUILD (0 s)"
                              "\r\x1b[Kwaiting: 3 ACTIVE (1 s)"
                              "\r\x1b[K")


def test_quiet_when_not_a_terminal():
    out = io.StringIO()
    with Progress(stream=out) as progress:
        progress.tick(lambda: {"BUILD": 1})
    assert out.getvalue() == ""
