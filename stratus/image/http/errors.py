"""The image API's one error type: a status and a message for the caller."""

from __future__ import annotations


class ImageAPIError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message
