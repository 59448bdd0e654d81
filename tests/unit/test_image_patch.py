"""Glance's image PATCH (image/patch.py) and the Content-MD5 reading (image/data.py):
pure functions, no database."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib

import pytest

from stratus.image import data, patch
from stratus.image.model import Image, ImageInputError, PatchConflict, ReadOnly

NOW = dt.datetime(2026, 1, 1)
IMAGE = Image("i", "p", name="a", properties={"os_type": "linux"}, tags=("x",))


def apply(body, draft=10, image=IMAGE, admin=False):
    return patch.apply(image, patch.parse(body, draft), admin=admin, now=NOW)


def test_draft_10_and_draft_4_say_the_same_change():
    ten = apply([{"op": "replace", "path": "/name", "value": "b"},
                 {"op": "add", "path": "/hw_architecture", "value": "x86_64"}])
    four = apply([{"replace": "/name", "value": "b"},
                  {"add": "/hw_architecture", "value": "x86_64"}], draft=4)
    assert ten == four
    assert (ten.name, ten.properties["hw_architecture"], ten.updated_at) == ("b", "x86_64", NOW)


@pytest.mark.parametrize("body, draft, error", [
    ([{"op": "add", "path": "/os_type", "value": "windows"}], 10, None),   # add replaces
    ([{"add": "/os_type", "value": "windows"}], 4, PatchConflict),         # not in draft 4
    ([{"op": "replace", "path": "/missing", "value": "v"}], 10, PatchConflict),
    ([{"op": "remove", "path": "/missing"}], 10, PatchConflict),
    ([{"op": "remove", "path": "/name"}], 10, ReadOnly),
    ([{"op": "replace", "path": "/status", "value": "active"}], 10, ReadOnly),
    ([{"op": "add", "path": "/os_glance_x", "value": "v"}], 10, ReadOnly),
    ([{"op": "add", "path": "/deleted", "value": "v"}], 10, ReadOnly),
    ([{"op": "replace", "path": "/owner", "value": "q"}], 10, ReadOnly),  # not an admin
    ([{"op": "add", "path": "/tags/-", "value": "y"}], 10, ImageInputError),
    ([{"op": "add", "path": "/a//b", "value": "y"}], 10, ImageInputError),
    ([{"op": "add", "path": "/a~2", "value": "y"}], 10, ImageInputError),
    ([{"op": "test", "path": "/name", "value": "a"}], 10, ImageInputError),
    ([{"op": "add", "path": "/name"}], 10, ImageInputError),               # no value
    ([{"add": "/a", "remove": "/b", "value": "y"}], 4, ImageInputError),
    ({"op": "add"}, 10, ImageInputError),                                   # not a list
    ([{"op": "add", "path": "/min_ram", "value": -1}], 10, ImageInputError),
    ([{"op": "add", "path": "/prop", "value": 5}], 10, ImageInputError),
])
def test_glance_refuses_what_it_refuses(body, draft, error):
    if error is None:
        assert apply(body, draft).properties["os_type"] == "windows"
    else:
        with pytest.raises(error):
            apply(body, draft)


def test_escaped_names_and_whole_tag_lists():
    changed = apply([{"op": "add", "path": "/a~1b~0c", "value": "v"},
                     {"op": "replace", "path": "/tags", "value": ["y", "y", "z"]}])
    assert changed.properties["a/b~c"] == "v" and changed.tags == ("y", "z")


def test_formats_change_only_while_queued_and_owner_only_by_admins():
    active = Image("i", "p", status="active", disk_format="raw")
    with pytest.raises(ReadOnly):
        apply([{"op": "replace", "path": "/disk_format", "value": "qcow2"}], image=active)
    assert apply([{"op": "replace", "path": "/disk_format", "value": "qcow2"}]
                 ).disk_format == "qcow2"
    assert apply([{"op": "replace", "path": "/owner", "value": "q"}], admin=True
                 ).owner == "q"


def test_content_md5_in_hex_or_base64():
    digest = hashlib.md5(b"x").digest()
    assert data.content_md5(digest.hex()) == digest.hex()
    assert data.content_md5(digest.hex().upper()) == digest.hex()
    assert data.content_md5(base64.b64encode(digest).decode()) == digest.hex()
    assert data.content_md5(None) is None
    with pytest.raises(ValueError):
        data.content_md5("not-an-md5")
