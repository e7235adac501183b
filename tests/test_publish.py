"""Publishing: a build killed at any moment, installing only what an instance lacks, rollback."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.builder import builder, policy
from app.bundle.install import install
from app.bundle.install import main as install_main
from app.bundle.reader import Bundle, BundleError
from app.config import PROJECT_ROOT
from tests.helpers import leftovers, tree_digest, write_jsonl
from tests.test_incremental import WORDS, assert_same_as_full, make_article, requests_for

BUILD = PROJECT_ROOT / "scripts" / "build_bundles.py"


def corpus(rng: random.Random, n: int, prefix: str) -> list[dict]:
    return [make_article(rng, rng.choice(list(WORDS)), f"{prefix}{i}") for i in range(n)]


def test_kill_during_incremental_build_leaves_a_servable_bundle(tmp_path: Path) -> None:
    rng = random.Random(21)
    src, out = tmp_path / "src", tmp_path / "out"
    base = corpus(rng, 400, "base")
    write_jsonl(src / "a.jsonl", base)
    old_id = builder.build(src, out)
    # The next publish: additions, changes and retractions.
    changed = [make_article(rng, r["language"], r["id"]) for r in base[:20]] + base[40:]
    write_jsonl(src / "a.jsonl", changed)
    write_jsonl(src / "b.jsonl", corpus(rng, 300, "new"))
    seen = set()
    for delay in (0.05, 0.2, 0.4, 0.7, 1.0, 1.5, 2.5):
        proc = subprocess.Popen(
            [sys.executable, str(BUILD), "--src", str(src), "--out", str(out), "--merge"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGKILL)  # the builder and its worker processes
        proc.wait()
        loaded = Bundle.load(out)  # whatever the moment, a whole bundle is served
        seen.add(loaded.bundle_id)
        if loaded.bundle_id != old_id:
            break  # the build committed before the kill
    assert seen <= {old_id, builder.build(src, tmp_path / "reference", full=True)}
    # Building again finishes the job, cleans up, and serves what a full build serves.
    builder.build(src, out)
    assert leftovers(out) == []
    files = {"a.jsonl": changed, "b.jsonl": []}
    assert_same_as_full(src, out, requests_for(files, rng), tmp_path)


def objects_in(bundle: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in (bundle / "objects").iterdir()}


def test_install_copies_only_what_the_instance_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(policy, "SMALL", 16)  # segments of this small archive count as big
    rng = random.Random(23)
    src, built, dest = tmp_path / "src", tmp_path / "built", tmp_path / "dest"
    write_jsonl(src / "a.jsonl", corpus(rng, 200, "a"))
    first_id = builder.build(src, built)
    first = install(built, dest)
    assert first.bundle_id == first_id and first.copied == first.objects
    assert Bundle.load(dest, verify="sha256").bundle_id == first_id
    # A publish of one article ships a few small objects, not the archive.
    write_jsonl(src / "b.jsonl", [make_article(rng, "en", "just-published")])
    second_id = builder.build(src, built)
    second = install(built, dest)
    assert second.bundle_id == second_id != first_id
    total = sum(objects_in(dest).values())
    assert second.copied < second.objects / 2
    assert second.bytes_copied < total / 20, (second.bytes_copied, total)
    assert Bundle.load(dest).languages["en"].find("just-published") is not None
    # Installing the same bundle again copies nothing.
    assert install(built, dest).copied == 0
    # Rollback serves the previous generation again, and back.
    assert install_main(["--rollback", str(dest)]) == 0
    assert Bundle.load(dest).bundle_id == first_id
    assert install_main(["--rollback", str(dest)]) == 0
    assert Bundle.load(dest).bundle_id == second_id


def test_install_refuses_a_damaged_bundle_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(25)
    src, built, dest = tmp_path / "src", tmp_path / "built", tmp_path / "dest"
    write_jsonl(src / "a.jsonl", corpus(rng, 50, "a"))
    builder.build(src, built)
    install(built, dest)
    write_jsonl(src / "b.jsonl", corpus(rng, 5, "b"))
    builder.build(src, built)
    before = tree_digest(dest)
    new_objects = sorted(set(objects_in(built)) - set(objects_in(dest)))
    victim = built / "objects" / max(new_objects, key=lambda n: objects_in(built)[n])
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 1
    victim.write_bytes(bytes(data))
    assert install_main([str(built), str(dest)]) == 1
    assert "does not match its name" in capsys.readouterr().err
    assert tree_digest(dest) == before
    with pytest.raises(BundleError):
        install(built, dest)


def test_check_finds_a_flipped_byte(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(27)
    src, dest = tmp_path / "src", tmp_path / "dest"
    write_jsonl(src / "a.jsonl", corpus(rng, 30, "a"))
    builder.build(src, dest)
    assert install_main(["--check", str(dest)]) == 0
    victim = max((dest / "objects").iterdir(), key=lambda p: p.stat().st_size)
    stamp = victim.stat()
    data = bytearray(victim.read_bytes())
    data[0] ^= 1
    victim.write_bytes(bytes(data))
    os.utime(victim, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # silent corruption
    Bundle.load(dest)  # trusted at load (same inode, size and mtime as when verified)...
    assert install_main(["--check", str(dest)]) == 1  # ...and found by the scrub
    assert "checksum mismatch" in capsys.readouterr().err
