"""A bounded mixed load in `make test` (~20 s; `make soak` runs it for minutes): no errors,
bounded memory per worker, no file-descriptor or connection leak."""

from __future__ import annotations

import json
import os

import pytest

from tests.reliability.harness import Server
from tests.reliability.load import growth_problems, run_load

pytestmark = pytest.mark.e2e

SECONDS = float(os.environ.get("NEWS_LOAD_SECONDS", "20"))


def test_sustained_mixed_load(server: Server) -> None:
    result = run_load(server, SECONDS)
    print(json.dumps(result.as_dict(), indent=1))
    assert result.requests > 1000, result.as_dict()
    assert result.writes > 0
    assert result.error_count == 0, result.errors
    assert not growth_problems(result), growth_problems(result)
    assert "Traceback" not in server.log_text()
