"""Contract fuzzing in `make test`: a bounded schemathesis run against real gunicorn
(`make fuzz` runs it for ten minutes).

Every operation of /openapi.json, every schemathesis phase including the stateful comment
flow (article -> create -> get, list, count, delete): no 5xx, every response conforms to
its schema, every error is JSON with `detail`, nosniff everywhere (fuzz_hooks.py).
"""

from __future__ import annotations

import os

import pytest

from tests.reliability.fuzz import LONG, SHORT, run_fuzz
from tests.reliability.harness import Server

pytestmark = pytest.mark.e2e


def test_contract_fuzz_finds_no_failure(server: Server) -> None:
    # `make fuzz`: NEWS_FUZZ=long; NEWS_FUZZ_SEED=N reproduces an earlier run.
    limits = LONG if os.environ.get("NEWS_FUZZ") == "long" else SHORT
    seed = os.environ.get("NEWS_FUZZ_SEED")
    result = run_fuzz(server, **limits, seed=int(seed) if seed else None)
    print(result.summary)
    assert result.returncode == 0, result.output[-20000:]
    assert result.generated >= 500, result.output[-3000:]
    # The stateful phase really ran the comment flow against the store.
    assert result.comments_created > 0, result.summary
    assert result.comments_deleted > 0, result.summary
    assert "Error handling request" not in server.log_text()
