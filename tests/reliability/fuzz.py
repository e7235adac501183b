"""Contract fuzzing: schemathesis against the served /openapi.json of a real gunicorn.

`run_fuzz` runs every phase schemathesis has (examples, coverage, fuzzing, stateful)
over every operation, with all its checks (tests/reliability/schemathesis.toml names the
statuses createComment may answer valid-looking input with) plus `error_contract` and
`comment_rules_stated` from
fuzz_hooks.py, against gunicorn started with the production app/gunicorn_conf.py. The bounded run is
in `make test` (test_fuzz.py); `make fuzz` is the long one (NEWS_FUZZ=long).
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.reliability.harness import ADMIN_TOKEN, BIN, REPO, Server

CONFIG = Path(__file__).with_name("schemathesis.toml")
SCHEMATHESIS = BIN / "schemathesis"

# The short run ends on max_examples on a quiet machine (about 50 s); max_time is only the
# backstop, wide enough that a busy machine still reaches the test's 500-case floor and the
# stateful phase, which runs last (a CI rehearsal hit 180 s in the fuzzing phase, 7,265 cases,
# and never reached the comment flow).
SHORT = {"max_examples": 25, "max_time": 300}
LONG = {"max_examples": 500, "max_time": 600}


@dataclass
class FuzzResult:
    returncode: int
    generated: int
    comments_created: int
    comments_deleted: int
    output: str

    @property
    def summary(self) -> str:
        return (
            f"{self.generated} test cases generated; stateful flow created "
            f"{self.comments_created} comments and deleted {self.comments_deleted}; "
            f"schemathesis exit {self.returncode}"
        )


def fuzz_command(
    base_url: str, *, max_examples: int, max_time: int, workers: int = 4, seed: int | None = None
) -> list[str]:
    """The schemathesis command line of a run.

    It names no checks: schemathesis runs every check by default, and a `--checks` option
    would outrank the per-operation exceptions of schemathesis.toml (a CI run failed on a
    held comment's 404 that the file had already declared expected).
    """
    cmd = [
        str(SCHEMATHESIS),
        "--no-color",
        "--config-file",
        str(CONFIG),
        "run",
        f"{base_url}/openapi.json",
        "--max-examples",
        str(max_examples),
        "--max-time",
        str(max_time),
        "--workers",
        str(workers),
        "--request-timeout",
        "10",
    ]
    if seed is not None:
        cmd += ["--seed", str(seed)]
    return cmd


def run_fuzz(
    server: Server, *, max_examples: int, max_time: int, workers: int = 4, seed: int | None = None
) -> FuzzResult:
    cmd = fuzz_command(
        server.base_url, max_examples=max_examples, max_time=max_time, workers=workers, seed=seed
    )
    env = {
        **os.environ,
        # The moderator `admin`, sent where the document asks for a moderator's token
        # (schemathesis.toml, [auth.openapi.ModeratorBearer]), never elsewhere: on a create
        # it would be a token that is no author's (401, docs/moderation.md).
        "NEWS_FUZZ_ADMIN_TOKEN": ADMIN_TOKEN,
        "SCHEMATHESIS_HOOKS": "tests.reliability.fuzz_hooks",
        "PYTHONPATH": str(REPO),
    }
    proc = subprocess.run(
        cmd, cwd=server.workdir, env=env, capture_output=True, text=True, timeout=max_time + 120
    )
    output = proc.stdout + proc.stderr
    match = re.search(r"(\d+) generated", output)
    generated = int(match.group(1)) if match else 0
    created, deleted = _comment_counts(server)
    return FuzzResult(proc.returncode, generated, created, deleted, output)


def _comment_counts(server: Server) -> tuple[int, int]:
    """Rows the fuzz run left in the SQLite store: created, and deleted (soft)."""
    assert server.dsn is not None
    path = server.dsn.removeprefix("sqlite:///")
    if not server.dsn.startswith("sqlite:///") or not Path(path).exists():
        return 0, 0
    with sqlite3.connect(path) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(comments)")}
        total = conn.execute("SELECT count(*) FROM comments").fetchone()[0]
        deleted = 0
        if "deleted_at" in columns:
            deleted = conn.execute(
                "SELECT count(*) FROM comments WHERE deleted_at IS NOT NULL"
            ).fetchone()[0]
    return int(total), int(deleted)
