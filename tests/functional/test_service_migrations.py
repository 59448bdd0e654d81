"""The image and identity databases: migrations build exactly what each schema module
declares, on every backend."""

from __future__ import annotations

from types import ModuleType

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from stratus.identity import schema as identity_schema
from stratus.identity import service as identity_service
from stratus.image import schema as image_schema
from stratus.image import service as image_service
from stratus.storage import engine as db

pytestmark = pytest.mark.all_backends


@pytest.mark.parametrize("service, schema", [(image_service, image_schema),
                                             (identity_service, identity_schema)],
                         ids=["image", "identity"])
def test_migrated_database_matches_schema_module(empty_database_url, service: ModuleType,
                                                 schema: ModuleType):
    engine = db.create_engine(empty_database_url)
    try:
        service.sync(engine)
        service.sync(engine)   # idempotent
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), schema.metadata)
        assert diff == []
    finally:
        engine.dispose()
