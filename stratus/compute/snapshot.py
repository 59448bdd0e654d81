"""The compute's side of createImage: copy the guest's disk and upload it into the image
the API created (queued, with the server's properties), as Nova's
``snapshot_instance`` does. Task states: ``image_snapshot_pending`` (the API's), then
``image_snapshot``, ``image_pending_upload``, ``image_uploading``, none; the server's
vm_state and power state do not change.

A failure deletes the image (Nova's: a snapshot that failed leaves no image behind),
clears the task and records the reason as the event's and the server's fault. An image
deleted by its owner meanwhile ends the snapshot quietly. A repeated delivery finds
the task already past its first state, or the image already active, and does no
harm.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from stratus.cells import actions
from stratus.cells import states as st
from stratus.compute.drivers.errors import DriverError
from stratus.image.client import ImageClientError, ImageWriter

if TYPE_CHECKING:
    from stratus.compute.lifecycle import LifecycleSteps

    _Base = LifecycleSteps
else:
    _Base = object

LOG = logging.getLogger(__name__)
EVENT = "compute_snapshot_instance"
DISK_FORMAT, CONTAINER_FORMAT = "qcow2", "bare"


class SnapshotSteps(_Base):
    image: ImageWriter | None

    def snapshot_instance(self, instance_uuid: str, image_id: str) -> None:
        uuid = instance_uuid
        with actions.step(self.cell_engine, uuid, "createImage", EVENT, self.host) as step:
            if not self._set(uuid, st.SNAPSHOT_TASKS, task_state=st.IMAGE_SNAPSHOT):
                LOG.info("%s: snapshot of %s ignored: the server is gone, elsewhere or in "
                         "another task", self.host, uuid)
                step.ignore()
                return
            try:
                self._snapshot(uuid, image_id)
            except ImageClientError as exc:
                if exc.status == 404:   # deleted meanwhile: nothing left to do
                    LOG.info("%s: image %s of %s was deleted during its snapshot",
                             self.host, image_id, uuid)
                    self._set(uuid, st.SNAPSHOT_TASKS, task_state=None)
                    return
                self._snapshot_failed(uuid, image_id, str(exc))
                step.fail(str(exc))
            except (DriverError, RuntimeError) as exc:
                self._snapshot_failed(uuid, image_id, str(exc))
                step.fail(str(exc))

    def _snapshot(self, uuid: str, image_id: str) -> None:
        if self.image is None:
            raise RuntimeError(f"compute {self.host} has no image service configured "
                               "([glance] api_servers)")
        image = self.image.get(image_id)
        if image.get("status") != "active":
            data = self.driver.snapshot(uuid)
            self._set(uuid, st.SNAPSHOT_TASKS, task_state=st.IMAGE_PENDING_UPLOAD)
            if image.get("status") == "queued":
                self.image.update(image_id, {"disk_format": DISK_FORMAT,
                                             "container_format": CONTAINER_FORMAT})
                self._set(uuid, st.SNAPSHOT_TASKS, task_state=st.IMAGE_UPLOADING)
                self.image.upload(image_id, data)
        self._set(uuid, st.SNAPSHOT_TASKS, task_state=None, updated_at=self.clock())
        LOG.info("%s: snapshot of %s uploaded as image %s", self.host, uuid, image_id)

    def _snapshot_failed(self, uuid: str, image_id: str, reason: str) -> None:
        LOG.warning("%s: snapshot of %s failed: %s", self.host, uuid, reason)
        if self.image is not None:
            try:
                self.image.delete(image_id)
            except ImageClientError as exc:
                if exc.status != 404:
                    LOG.warning("%s: could not delete image %s of a failed snapshot: %s",
                                self.host, image_id, exc)
        self._set(uuid, st.SNAPSHOT_TASKS, task_state=None,
                  fault=f"createImage: {reason}")
