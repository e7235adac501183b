"""The app's own CPU per request, without a server: bench/profile_app.py of a source tree,
run in a process of its own over a corpus's URL lists."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from harness.paths import ROOT, VENV_BIN


def app_cpu(
    bundle: Path, urls: Path, endpoints: str, seconds: float, tree: Path = ROOT
) -> dict[str, Any]:
    """profile_app.py's figures ({endpoint: {"cpu_us_per_req", "kb_per_resp"}}) for the
    comma-separated `endpoints` of the URL lists in `urls`, `tree` serving `bundle`."""
    with tempfile.TemporaryDirectory(prefix="news-app-cpu-") as tmp:
        env = dict(
            os.environ,
            PYTHONPATH=str(tree),
            NEWS_BUNDLE_DIR=str(bundle.resolve()),  # the tree is the working directory
            NEWS_COMMENTS_DSN=f"sqlite:///{tmp}/c.sqlite3",
        )
        cmd = [
            str(VENV_BIN / "python"),
            str(tree / "bench" / "profile_app.py"),
            str(urls.resolve()),
            endpoints,
            str(seconds),
            "--json",
        ]
        out = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))
