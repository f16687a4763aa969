"""What the gateway app does when it starts, before any request."""

from __future__ import annotations

from fastapi.testclient import TestClient

from gateway.app import create_app
from gateway.settings import GatewaySettings
from memory import catalog as catalog_mod


def test_the_transformer_catalog_is_loaded_at_start(redis_url: str) -> None:
    """Its first load (importing the consolidation package) fell on the first memory map
    a gateway served: the app loads it as it starts."""
    was = catalog_mod.catalog()
    catalog_mod.set_catalog(None)
    try:
        app = create_app(GatewaySettings(redis_url=redis_url, insecure_local=True, rate=0),
                         mounts=())
        assert catalog_mod._catalog is None
        with TestClient(app, base_url="http://127.0.0.1"):
            assert catalog_mod._catalog is not None
    finally:
        catalog_mod.set_catalog(was)
