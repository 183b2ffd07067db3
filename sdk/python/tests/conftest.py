from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "stack: runs against the real Tapline stack (test/integration/sdk-python.test.ts sets it up)",
    )
