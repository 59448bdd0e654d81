"""The conductor's events in a server's instance actions: one per task it runs (Nova's
``conductor_migrate_server`` and friends), ending Success, or Error with the task's
reason; the tasks add their compute steps (``stratus.cells.actions``)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from stratus.cells import actions
from stratus.conductor import records
from stratus.storage import engine as db

if TYPE_CHECKING:
    from stratus.conductor.build import ConductorContext

LOG = logging.getLogger(__name__)

FAILED = ("error: ", "abandoned: ")


@contextmanager
def task_step(ctx: ConductorContext, instance_uuid: str, names: str | Sequence[str],
              event: str) -> Iterator[actions.Step]:
    """Record the task run in the body as ``event`` of the server's action; a server in
    no cell (or whose cell cannot be read) gets no event, and the task runs anyway."""
    try:
        with db.read(ctx.api_engine) as conn:
            cell = records.cell_of_instance(conn, instance_uuid)
    except Exception:
        LOG.exception("%s: the server's cell could not be read for its action", event)
        cell = None
    if cell is None:
        yield actions.Step()
        return
    with actions.step(ctx.engines.get(cell), instance_uuid, names, event) as step:
        yield step


def judge(step: actions.Step, outcome: str) -> None:
    """A task's outcome as its event's result: "ignored" (or nothing: the task did not
    run) drops the event; "error: why" and "abandoned: why" fail it with the reason."""
    if not outcome or outcome == "ignored":
        step.ignore()
        return
    for marker in FAILED:
        at = outcome.find(marker)
        if at >= 0:
            step.fail(outcome[at + len(marker):])
            return


def caller_of(instance: dict[str, Any]) -> actions.Caller:
    """Who asked for a server's build: the API put its request id in the instance."""
    request_id = instance.get("request_id")
    return actions.Caller(str(request_id) if request_id else actions.Caller.internal()
                          .request_id, instance.get("user_id"), instance.get("project_id"))
