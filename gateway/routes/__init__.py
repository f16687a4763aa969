"""REST routes under ``/v1``."""
