"""scripts/bundle_sync.py: a pod's bundle directory follows the bundle origin."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from falcon.testing import TestClient

from app.builder.builder import build
from app.bundle.install import damaged_objects
from app.bundle.reader import Bundle
from app.config import Settings
from app.wsgi import create_app
from tests.reliability.harness import SAMPLE_SRC

_spec = importlib.util.spec_from_file_location(
    "bundle_sync", Path(__file__).resolve().parents[1] / "scripts" / "bundle_sync.py"
)
assert _spec is not None and _spec.loader is not None
bundle_sync = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bundle_sync)


def served_bundle(dest: Path, tmp: Path) -> str:
    app = create_app(Settings(bundle_dir=dest, comments_dsn=f"sqlite:///{tmp / 'c.sqlite3'}"))
    return json.loads(TestClient(app).simulate_get("/ready").content)["bundle"]


def source_with(tmp: Path, article_id: str) -> Path:
    """The sample source plus one more article (a copy of its first, under a new id)."""
    src = tmp / "src"
    shutil.copytree(SAMPLE_SRC, src)
    first_file = sorted(src.glob("*.jsonl"))[0]
    record = json.loads(first_file.read_text().splitlines()[0])
    (src / "extra.jsonl").write_text(json.dumps({**record, "id": article_id}) + "\n")
    return src


def test_init_then_sidecar_follow_the_origin(tmp_path: Path) -> None:
    origin, dest = tmp_path / "origin", tmp_path / "served"
    assert bundle_sync.main(["--origin", str(origin), "--dest", str(dest), "--once"]) == 1
    assert not dest.exists()  # no bundle at the origin yet: the pod must not start

    first = build(SAMPLE_SRC, origin)
    assert bundle_sync.main(["--origin", str(origin), "--dest", str(dest), "--once"]) == 0
    assert served_bundle(dest, tmp_path) == first

    src = source_with(tmp_path, "synced-article")
    second = build(src, origin)
    assert second != first
    args = ["--origin", str(origin), "--dest", str(dest), "--interval", "0", "--max-polls", "2"]
    assert bundle_sync.main(args) == 0
    assert served_bundle(dest, tmp_path) == second


def test_a_damaged_origin_bundle_is_not_installed(tmp_path: Path) -> None:
    origin, dest = tmp_path / "origin", tmp_path / "served"
    first = build(SAMPLE_SRC, origin)
    assert bundle_sync.main(["--origin", str(origin), "--dest", str(dest), "--once"]) == 0
    src = source_with(tmp_path, "x2")
    build(src, origin)
    # An object the new generation needs and the instance lacks (objects it already holds
    # are not copied again, so damage to those at the origin does not reach it).
    new_objects = [
        p for p in (origin / "objects").iterdir() if not (dest / "objects" / p.name).exists()
    ]
    victim = max(new_objects, key=lambda p: p.stat().st_size)
    victim.write_bytes(victim.read_bytes()[:-10])
    assert bundle_sync.main(["--origin", str(origin), "--dest", str(dest), "--once"]) == 1
    assert served_bundle(dest, tmp_path) == first  # still the verified one


def test_sidecar_copies_damaged_files_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Between origin changes, the sidecar stats the served files: missing or truncated ones
    are copied again from the origin, and the directory serves the same bundle, whole."""
    origin, dest = tmp_path / "origin", tmp_path / "served"
    first = build(SAMPLE_SRC, origin)
    assert bundle_sync.main(["--origin", str(origin), "--dest", str(dest), "--once"]) == 0
    manifest_before = (dest / "manifest.json").read_bytes()
    capsys.readouterr()  # the init pass's output
    seen: list[str] = []

    def output() -> str:
        captured = capsys.readouterr()
        seen.append(captured.out + captured.err)
        return "".join(seen)

    sidecar = threading.Thread(target=bundle_sync.sync, args=(origin, dest, 0.1, False, 100))
    sidecar.start()
    try:
        assert wait_for(lambda: "bundle" in output())  # its first pass (nothing to do)
        objects = sorted((dest / "objects").iterdir(), key=lambda p: -p.stat().st_size)
        objects[0].unlink()
        os.truncate(objects[1], 10)
        assert damaged_objects(dest) == sorted([objects[0].name, objects[1].name])
        assert wait_for(lambda: "repaired bundle" in output())
    finally:
        sidecar.join(30)
    log = output()
    assert "2 damaged object(s)" in log and "copying them again" in log
    assert damaged_objects(dest) == []
    assert (dest / "manifest.json").read_bytes() == manifest_before
    assert Bundle.load(dest, verify="sha256").bundle_id == first


def wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()
