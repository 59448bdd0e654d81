"""Cell and host mappings in the API database, on every backend."""

from __future__ import annotations

import pytest

from stratus.cells import mappings as m
from stratus.storage import engine as db

pytestmark = pytest.mark.all_backends


def test_create_disabled_enable_and_list(api_engine):
    with db.write(api_engine) as conn:
        m.create_cell(conn, "cell0", "none:///", "sqlite://", uuid=m.CELL0_UUID)
        c1 = m.create_cell(conn, "cell1", "inproc://cell1", "sqlite:///c1.db")
        c2 = m.create_cell(conn, "cell2", "inproc://cell2", "sqlite:///c2.db", disabled=True)
    with db.read(api_engine) as conn:
        assert [c.name for c in m.list_cells(conn)] == ["cell0", "cell1", "cell2"]
        assert [c.name for c in m.list_cells(conn, enabled_only=True)] == ["cell0", "cell1"]
    with db.write(api_engine) as conn:
        assert m.update_cell(conn, c2.uuid, disabled=False).disabled is False
        with pytest.raises(m.CellError, match="already enabled"):
            m.update_cell(conn, c1.uuid, disabled=False)
    with db.write(api_engine) as conn, pytest.raises(m.CellError, match="cell0"):
        m.update_cell(conn, m.CELL0_UUID, disabled=True)


def test_unknown_cell_and_duplicate_name(api_engine):
    with db.write(api_engine) as conn:
        m.create_cell(conn, "cell1", "inproc://c", "sqlite://")
        with pytest.raises(m.CellError, match="already exists"):
            m.create_cell(conn, "cell1", "inproc://c", "sqlite://")
    with db.read(api_engine) as conn, pytest.raises(m.CellNotFound):
        m.get_cell(conn, "nope")


def test_host_mappings_and_delete_guard(api_engine):
    with db.write(api_engine) as conn:
        c1 = m.create_cell(conn, "cell1", "inproc://c", "sqlite://")
        assert m.map_host(conn, "host1", c1.uuid) is True
        assert m.map_host(conn, "host1", c1.uuid) is False
        assert m.list_hosts(conn) == [("cell1", c1.uuid, "host1")]
        assert m.cell_of_host(conn, "host1") == c1
    with db.write(api_engine) as conn, pytest.raises(m.CellError, match="host"):
        m.delete_cell(conn, c1.uuid)
    with db.write(api_engine) as conn:
        m.delete_cell(conn, c1.uuid, force=True)
        assert m.list_cells(conn) == []
        assert m.list_hosts(conn) == []
