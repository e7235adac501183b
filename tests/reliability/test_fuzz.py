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


def test_the_config_files_exceptions_are_the_ones_in_force(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every check runs on every operation but where schemathesis.toml says otherwise.

    A check named on the command line outranks the file's per-operation settings, so the
    command line names none; resolved as the run resolves them, the file's exceptions hold.
    """
    import schemathesis
    from schemathesis.checks import CHECKS
    from schemathesis.config import SchemathesisConfig

    from app.openapi import openapi_document
    from app.routes import ROUTES
    from tests.reliability.fuzz import CONFIG, fuzz_command

    cmd = fuzz_command("http://127.0.0.1:1", max_examples=1, max_time=1)
    assert not {"-c", "--checks", "--exclude-checks"} & set(cmd), cmd
    monkeypatch.setenv("NEWS_FUZZ_ADMIN_TOKEN", "unused")
    schema = schemathesis.openapi.from_dict(
        openapi_document(ROUTES), config=SchemathesisConfig.from_path(str(CONFIG))
    )
    names = CHECKS.get_all_names()
    off: dict[str, set[str]] = {}
    for result in schema.get_all_operations():
        operation = result.ok()
        for phase in (None, "stateful"):
            config = schema.config.checks_config_for(operation=operation, phase=phase)
            for name in names:
                if not config.get_by_name(name=name).enabled:
                    off.setdefault(name, set()).add(operation.definition.raw["operationId"])
    # A comment held for moderation is a 201 whose comment answers readers 404 on every
    # operation they make on it by id.
    readers = {"getComment", "getCommentHead", "reportComment", "sendNotice", "editComment"}
    assert off == {"ensure_resource_availability": {"createComment", *readers}}
