"""The one line that says why tests skipped (tests/conftest.py's terminal summary)."""

from __future__ import annotations

from tests.conftest import SKIP_REASONS_SHOWN, skip_summary


def test_reasons_are_grouped_and_counted_most_frequent_first():
    reasons = ["needs $PG"] * 3 + ["needs chromium"] + ["needs $MYSQL"] * 2
    assert skip_summary(reasons) == ("6 skipped: 3 because needs $PG; 2 because needs "
                                     "$MYSQL; 1 because needs chromium")


def test_a_long_tail_of_reasons_is_counted_not_listed():
    reasons = [f"reason {i}" for i in range(SKIP_REASONS_SHOWN + 3)]
    line = skip_summary(reasons)
    assert line is not None and line.count(" because ") == SKIP_REASONS_SHOWN
    assert line.endswith("; 3 for 3 other reasons (-rs lists each)")


def test_nothing_skipped_says_nothing():
    assert skip_summary([]) is None
