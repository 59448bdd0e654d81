"""The ``reason`` label of ``stratus_scheduler_no_valid_host_total``: one small, stable
word for why a NoValidHost happened.

The scheduler's explanation (``stratus.scheduler.explanation``) decides it and ships it
in the error's details (:class:`~stratus.scheduler.explanation.Category`); this is the
one place the metrics read it. A NoValidHost without one (from an older peer, or made
outside the explanation) is put in the same vocabulary from its counts: the reason
that excluded the most hosts, by what it names.
"""

from __future__ import annotations

from stratus.scheduler.errors import NoValidHost
from stratus.scheduler.explanation import Category

CATEGORIES = tuple(c.value for c in Category)

# (words in the reason, category), first match wins: the specific before the general.
_BY_WORDS: tuple[tuple[tuple[str, ...], Category], ...] = (
    (("taken meanwhile", "claim refused"), Category.CONFLICT),
    (("root_required", "disabled"), Category.DISABLED),
    (("service down",), Category.DOWN),
    (("insufficient_capacity", "no_inventory", "combined_capacity", "min_unit",
      "max_unit", "step_size", "group_unsatisfied"), Category.CAPACITY),
    (("trait", "aggregate", "not_in_tree", "group_policy", "same_subtree", "affinity",
      "server group", "availability zone", "forced hosts", "requested destination",
      "cell"), Category.CONSTRAINT),
)


def category(exc: NoValidHost) -> str:
    """The reason category of ``exc``, one of :data:`CATEGORIES`."""
    if exc.details.get("category") in CATEGORIES:
        return exc.category
    if exc.counts:
        # Largest count first; a tie goes to the reason reported first.
        main = max(exc.counts.items(), key=lambda kv: kv[1])[0]
        return _by_words(main.lower(), Category.CONSTRAINT)
    reason = exc.reason.lower()
    if "cannot be scheduled" in reason or "refused the request" in reason:
        return Category.INVALID.value
    return _by_words(reason, Category.UNKNOWN)


def _by_words(text: str, otherwise: Category) -> str:
    for words, name in _BY_WORDS:
        if any(word in text for word in words):
            return name.value
    return otherwise.value
