"""The compute's side of createImage (and createBackup): copy the guest's disk and
upload it into the image the API created (queued, with the server's properties), as
Nova's
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
import time
from typing import TYPE_CHECKING

from stratus.cells import states as st
from stratus.compute import records as cr
from stratus.compute.drivers.errors import DriverError
from stratus.image.client import ImageClientError, ImageWriter

if TYPE_CHECKING:
    from stratus.compute.lifecycle import LifecycleSteps

    _Base = LifecycleSteps
else:
    _Base = object

LOG = logging.getLogger(__name__)
EVENT, BACKUP_EVENT = "compute_snapshot_instance", "compute_backup_instance"
SNAPSHOT_TASKS = (*st.SNAPSHOT_TASKS, st.IMAGE_BACKUP)
DISK_FORMAT, CONTAINER_FORMAT = "qcow2", "bare"


class SnapshotSteps(_Base):
    image: ImageWriter | None

    def snapshot_instance(self, instance_uuid: str, image_id: str) -> None:
        self._image_of(instance_uuid, image_id, "createImage", EVENT, st.IMAGE_SNAPSHOT)

    def backup_instance(self, instance_uuid: str, image_id: str, backup_type: str,
                        rotation: int) -> None:
        """A snapshot as a backup, then the oldest backups of this type beyond
        ``rotation`` deleted (Nova's ``_rotate_backups``)."""
        if self._image_of(instance_uuid, image_id, "createBackup", BACKUP_EVENT,
                          st.IMAGE_BACKUP):
            self._rotate(instance_uuid, backup_type, rotation)

    def snapshot_for_shelve(self, instance_uuid: str, image_id: str) -> None:
        """Shelve's copy of the disk (the conductor drives the task): the image active
        on return, or deleted and the failure raised."""
        try:
            self._upload(instance_uuid, image_id)
        except (ImageClientError, DriverError, RuntimeError) as exc:
            self._delete_image(instance_uuid, image_id)
            raise RuntimeError(f"the shelved image could not be written: {exc}") from None

    def _rotate(self, uuid: str, backup_type: str, rotation: int) -> None:
        if self.image is None:
            return
        try:
            found = self.image.listed([("image_type", "backup"),
                                       ("backup_type", backup_type),
                                       ("instance_uuid", uuid), ("sort_key", "created_at"),
                                       ("sort_dir", "desc"), ("limit", "1000")])["images"]
            for image in found[rotation:]:
                self.image.delete(str(image["id"]))
                LOG.info("%s: backup %s of %s rotated out", self.host, image["id"], uuid)
        except ImageClientError as exc:
            LOG.warning("%s: rotating the backups of %s failed: %s", self.host, uuid, exc)

    def _image_of(self, uuid: str, image_id: str, action: str, event: str,
                  first: str) -> bool:
        """Copy the disk into the image: True if it was uploaded."""
        with cr.step(self.records, uuid, action, event, self.host) as step:
            if not self._set(uuid, SNAPSHOT_TASKS, task_state=first):
                LOG.info("%s: snapshot of %s ignored: the server is gone, elsewhere or in "
                         "another task", self.host, uuid)
                step.ignore()
                return False
            try:
                self._snapshot(uuid, image_id)
                return True
            except ImageClientError as exc:
                if exc.status == 404:   # deleted meanwhile: nothing left to do
                    LOG.info("%s: image %s of %s was deleted during its snapshot",
                             self.host, image_id, uuid)
                    self._set(uuid, SNAPSHOT_TASKS, task_state=None)
                    return False
                self._snapshot_failed(uuid, image_id, str(exc))
                step.fail(str(exc))
            except (DriverError, RuntimeError) as exc:
                self._snapshot_failed(uuid, image_id, str(exc))
                step.fail(str(exc))
        return False

    def _snapshot(self, uuid: str, image_id: str) -> None:
        self._upload(uuid, image_id, (st.IMAGE_PENDING_UPLOAD, st.IMAGE_UPLOADING))
        self._set(uuid, SNAPSHOT_TASKS, task_state=None, updated_at=self.clock())
        LOG.info("%s: snapshot of %s uploaded as image %s", self.host, uuid, image_id)

    def _upload(self, uuid: str, image_id: str, tasks: tuple[str, str] | None = None
                ) -> None:
        """Copy the disk into the image (already active: done); ``tasks``: the task
        states to pass through (pending upload, uploading)."""
        if self.image is None:
            raise RuntimeError(f"compute {self.host} has no image service configured "
                               "([glance] api_servers)")
        image = self.image.get(image_id)
        if image.get("status") == "active":
            return
        data = self.driver.snapshot(uuid)
        time.sleep(self.driver.copy_seconds(uuid))   # the copy itself, outside the driver
        if tasks:
            self._set(uuid, SNAPSHOT_TASKS, task_state=tasks[0])
        if image.get("status") == "queued":
            self.image.update(image_id, {"disk_format": DISK_FORMAT,
                                         "container_format": CONTAINER_FORMAT})
            if tasks:
                self._set(uuid, SNAPSHOT_TASKS, task_state=tasks[1])
            self.image.upload(image_id, data)

    def _delete_image(self, uuid: str, image_id: str) -> None:
        if self.image is not None:
            try:
                self.image.delete(image_id)
            except ImageClientError as exc:
                if exc.status != 404:
                    LOG.warning("%s: could not delete image %s of a failed snapshot of "
                                "%s: %s", self.host, image_id, uuid, exc)

    def _snapshot_failed(self, uuid: str, image_id: str, reason: str) -> None:
        LOG.warning("%s: snapshot of %s failed: %s", self.host, uuid, reason)
        self._delete_image(uuid, image_id)
        self._set(uuid, SNAPSHOT_TASKS, task_state=None,
                  fault=f"createImage: {reason}")
