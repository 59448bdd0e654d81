"""Process-wide settings a long-running Stratus process applies once it has started.

Python's cyclic garbage collector walks every tracked object in a full collection.
A scheduler or Placement worker holds a large, long-lived heap (modules, the
candidates index, cached host rows) and allocates a burst of short-lived objects
per request (a thousand allocation candidates decode to some 15,000 dicts and
lists), which keeps triggering full collections of that heap: measured at
max_placement_results = 1000, half of a scheduling decision's CPU time. Freezing
what start-up built moves it out of the collector's sight (it is still freed
normally when no longer referenced); only what comes after is walked.
"""

from __future__ import annotations

import gc


def settle_heap() -> None:
    """Call once start-up is done: collect, then freeze every object alive now."""
    gc.collect()
    gc.freeze()
