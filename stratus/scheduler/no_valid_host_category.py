"""One small, stable word for why a NoValidHost happened: the metrics' ``reason`` label.

The messages themselves are for people and change; dashboards and alerts need a label
that does not. :func:`category` is the one place that maps a NoValidHost to it: the
reason that excluded the most hosts (for Placement's explain, each provider or tree is
counted once, under the first constraint it fails), mapped to one of
:data:`CATEGORIES` by what it names.
"""

from __future__ import annotations

from stratus.scheduler.errors import NoValidHost

CATEGORIES = ("capacity", "host_disabled", "host_down", "traits", "aggregates",
              "group_policy", "availability_zone", "host_filters", "claim_race", "cells",
              "invalid_request", "unexplained", "other")

# (words in the reason, category), first match wins: the specific before the general.
_BY_WORDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("taken meanwhile", "claim refused"), "claim_race"),
    (("root_required", "service disabled", "disabled"), "host_disabled"),
    (("service down",), "host_down"),
    (("insufficient_capacity", "no_inventory", "combined_capacity", "min_unit",
      "max_unit", "step_size", "group_unsatisfied"), "capacity"),
    (("trait",), "traits"),
    (("aggregate", "not_in_tree"), "aggregates"),
    (("group_policy", "same_subtree", "affinity", "server group"), "group_policy"),
    (("availability zone",), "availability_zone"),
    (("cell",), "cells"),
    (("placement",), "other"),
)


def category(exc: NoValidHost) -> str:
    """The reason category of ``exc``, one of :data:`CATEGORIES`."""
    if exc.counts:
        # Largest count first; a tie goes to the reason reported first.
        main = max(exc.counts.items(), key=lambda kv: kv[1])[0]
        return _by_words(main.lower(), "host_filters")
    reason = exc.reason.lower()
    if "cannot be scheduled" in reason or "refused the request" in reason:
        return "invalid_request"
    if "cannot explain" in reason:
        return "unexplained"
    return _by_words(reason, "other")


def _by_words(text: str, otherwise: str) -> str:
    for words, name in _BY_WORDS:
        if any(word in text for word in words):
            return name
    return otherwise
