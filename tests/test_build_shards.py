"""A from-scratch build split into a plan, N shards and a merge (app/builder/shards.py) gives
the bundle a single build gives, byte for byte; and its failures leave OUT as it was.

The chunk size and the merge cap are lowered, so that a small random corpus is cut into many
chunks and units, some merged from several chunks and some not, and every shard gets a
different mix of them.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.builder import builder, cli, policy, shards
from app.builder.records import SourceError
from app.bundle import format as fmt
from app.search import pair_words
from tests.helpers import good, tree_digest, write_jsonl
from tests.test_incremental import WORDS, make_article, write_tree


@pytest.fixture(autouse=True)
def small_units(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(builder, "CHUNK_ARTICLES", {True: 3, False: 4})
    monkeypatch.setattr(policy, "MAX_DOCS", 10)
    monkeypatch.setattr(pair_words, "MIN_PER_ARTICLE", 1.0)  # some pair words even here


def output_files(out: Path) -> dict[str, bytes]:
    """Every file of a bundle directory but the verified record (inodes and times)."""
    return {
        path.relative_to(out).as_posix(): path.read_bytes()
        for path in sorted(out.rglob("*"))
        if path.is_file() and path.name != "verified.json"
    }


def corpus(seed: int, size: int) -> dict[str, list[dict]]:
    """`size` articles over three languages and up to three files, with stories across
    languages and some retractions."""
    rng = random.Random(seed)
    files: dict[str, list[dict]] = {f"part{i}.jsonl": [] for i in range(rng.randint(1, 3))}
    for n in range(size):
        language = rng.choice(sorted(WORDS))
        record = make_article(rng, language, f"{language}-{n}", stories=True)
        if rng.random() < 0.08:
            record["retracted"] = {"at": "2026-03-09T00:00:00Z", "reason": "Wrong figures."}
        files[rng.choice(sorted(files))].append(record)
    return files


def sharded(src: Path, work: Path, out: Path, count: int, order: list[int]) -> None:
    shards.plan_step(src, work, jobs=1)
    for index in order:
        shards.run_shard(src, work, index, count, jobs=1)
    shards.merge_shards(work, count, out, jobs=1)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(1, 60),
    count=st.integers(1, 6),
    data=st.data(),
)
def test_sharded_build_equals_single_build(
    tmp_path_factory: pytest.TempPathFactory, seed: int, size: int, count: int, data: st.DataObject
) -> None:
    root = tmp_path_factory.mktemp("shards")
    src = root / "src"
    write_tree(src, corpus(seed, size))
    builder.build_report(src, root / "single", jobs=1, full=True, publish_time=None)
    order = data.draw(st.permutations(range(count)))  # shards finish in any order
    sharded(src, root / "work", root / "sharded", count, list(order))
    single, many = output_files(root / "single"), output_files(root / "sharded")
    assert many.keys() == single.keys()
    assert [name for name in single if single[name] != many[name]] == []


def test_units_cover_every_article_once_and_merge_runs_of_chunks() -> None:
    plan = shards.Plan(
        Path("."),
        shards.Scan(),
        {},
        {lang: [] for lang in builder.LANGUAGES},
        {},
        None,  # type: ignore[arg-type]
    )
    plan.order["en"] = list(range(23))  # chunks of 4: 4 4 4 4 4 3; merged while <= 10
    plan.order["ja"] = list(range(7))  # chunks of 3: 3 3 1
    units = plan.units()
    assert [(u.key, u.chunks) for u in units] == [
        ("en/0", ((0, 4), (4, 8))),
        ("en/1", ((8, 12), (12, 16))),
        ("en/2", ((16, 20), (20, 23))),
        ("ja/0", ((0, 3), (3, 6), (6, 7))),
    ]
    for count in (1, 2, 3, 7):
        dealt = shards.deal(units, count)
        assert sorted(u.key for shard in dealt for u in shard) == sorted(u.key for u in units)


@pytest.fixture
def served(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A source tree and OUT holding the bundle of it."""
    src = tmp_path / "src"
    write_tree(src, corpus(7, 40))
    out = tmp_path / "out"
    builder.build_report(src, out, jobs=1, full=True)
    return src, out, tree_digest(out)


def test_a_bad_placing_field_fails_the_plan_naming_file_line_and_field(
    tmp_path: Path, served: tuple[Path, Path, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """The plan checks the fields that place an article (id, language, published_at,
    story_id): a bad one fails it, with the message a single build gives."""
    src, out, before = served
    write_jsonl(src / "zz.jsonl", [good("ok-1"), good("bad-1", published_at="yesterday")])
    work = tmp_path / "work"
    status = cli.main(["--step", "plan", "--src", str(src), "--work", str(work)])
    err = capsys.readouterr().err
    assert status == 1
    assert f"{src / 'zz.jsonl'}:2: field 'published_at'" in err
    assert not (work / shards.PLAN_DIR / shards.PLAN_JSON).exists()
    assert tree_digest(out) == before


def test_a_bad_record_fails_its_shard_naming_file_line_and_field_and_the_merge(
    tmp_path: Path, served: tuple[Path, Path, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """Any other field is checked by the shard that compiles the article: that shard fails
    naming every bad record of its chunk, the others finish, the merge refuses, OUT is
    unchanged. (The plan reads its pair-word sample whole: these are of a language without
    pair words.)"""
    src, out, before = served
    assert "zh_cn" not in pair_words.PAIR_LANGUAGES
    lines = [good("ok-1"), good("bad-1", title=42), good("bad-2", category="")]
    write_jsonl(src / "zz.jsonl", [{**line, "language": "zh_cn"} for line in lines])
    work = tmp_path / "work"
    count = 3
    assert cli.main(["--step", "plan", "--src", str(src), "--work", str(work)]) == 0
    statuses = [
        cli.main(
            [
                "--step",
                "shard",
                "--src",
                str(src),
                "--work",
                str(work),
                "--shard",
                str(k),
                "--shards",
                str(count),
                "--jobs",
                "1",
            ]
        )
        for k in range(count)
    ]
    err = capsys.readouterr().err
    assert sorted(statuses) == [0, 0, 1]
    assert f"{src / 'zz.jsonl'}:2: field 'title'" in err
    assert f"{src / 'zz.jsonl'}:3: field 'category'" in err
    merge = ["--step", "merge", "--work", str(work), "--shards", str(count), "--out", str(out)]
    assert cli.main(merge) == 1
    err = capsys.readouterr().err
    assert f"shard {statuses.index(1)} of {count} has no output" in err
    assert tree_digest(out) == before


def test_a_line_changed_after_the_plan_fails_its_shard_and_the_merge(
    tmp_path: Path, served: tuple[Path, Path, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    src, out, before = served
    work = tmp_path / "work"
    count = 3
    shards.plan_step(src, work, jobs=1)
    # One article's line is rewritten (same length: every other line stays where it was).
    path = sorted(src.glob("*.jsonl"))[0]
    lines = path.read_bytes().split(b"\n")
    n = next(i for i, line in enumerate(lines) if line and b"retracted" not in line)
    lines[n] = lines[n].replace(b":00:00+09:00", b":00:01+09:00", 1)
    path.write_bytes(b"\n".join(lines))
    failed = []
    for index in range(count):
        status = cli.main(
            [
                "--step",
                "shard",
                "--src",
                str(src),
                "--work",
                str(work),
                "--shard",
                str(index),
                "--shards",
                str(count),
                "--jobs",
                "1",
            ]
        )
        if status:
            failed.append(index)
    assert len(failed) == 1
    err = capsys.readouterr().err
    assert f"{path}:{n + 1}: the line changed since the sources were scanned" in err
    status = cli.main(
        [
            "--step",
            "merge",
            "--work",
            str(work),
            "--shards",
            str(count),
            "--out",
            str(out),
            "--jobs",
            "1",
        ]
    )
    err = capsys.readouterr().err
    assert status == 1
    assert f"shard {failed[0]} of {count} has no output" in err and "left unchanged" in err
    assert tree_digest(out) == before


def test_a_missing_or_foreign_shard_output_fails_the_merge(
    tmp_path: Path, served: tuple[Path, Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    src, out, before = served
    work = tmp_path / "work"
    shards.plan_step(src, work, jobs=1)
    shards.run_shard(src, work, 0, 3, jobs=1)
    # A Kubernetes Indexed Job gives each pod its index in JOB_COMPLETION_INDEX: --shard.
    monkeypatch.setenv("JOB_COMPLETION_INDEX", "1")
    step = ["--step", "shard", "--src", str(src), "--work", str(work), "--shards", "3"]
    assert cli.main([*step, "--jobs", "1"]) == 0
    assert (shards.shard_dir(work, 1) / shards.SHARD_JSON).is_file()
    with pytest.raises(shards.ShardError, match=r"shard 2 of 3 has no output"):
        shards.merge_shards(work, 3, out, jobs=1)
    assert tree_digest(out) == before
    # Shard 2 of another plan (the sources changed and were planned again) is refused.
    other = tmp_path / "other"
    write_jsonl(src / "zz.jsonl", [good("late-1")])
    shards.plan_step(src, other, jobs=1)
    shards.run_shard(src, other, 2, 3, jobs=1)
    shutil.copytree(shards.shard_dir(other, 2), shards.shard_dir(work, 2))
    with pytest.raises(shards.ShardError, match=r"shard 2 of 3 of plan \w+, not shard 2 of 3"):
        shards.merge_shards(work, 3, out, jobs=1)
    # A segment of a shard's output is checked as a reader checks one: a missing component
    # is refused, naming its unit.
    shards.run_shard(src, work, 2, 3, jobs=1)
    output = shards.shard_dir(work, 2) / shards.SHARD_JSON
    descriptor = orjson.loads(output.read_bytes())
    key = next(iter(descriptor["segments"]))
    del descriptor["segments"][key]["files"][fmt.ARTICLES_BIN]
    output.write_bytes(orjson.dumps(descriptor))
    with pytest.raises(
        shards.ShardError, match=rf"is damaged \(segment {key}: field 'files' has no component"
    ):
        shards.merge_shards(work, 3, out, jobs=1)
    # A damaged object is caught as it is copied.
    shards.run_shard(src, work, 2, 3, jobs=1)
    victim = next((shards.shard_dir(work, 1) / "objects").iterdir())
    os.chmod(victim, 0o644)
    victim.write_bytes(victim.read_bytes() + b"x")
    with pytest.raises(shards.ShardError, match=r"shard 1: object \w+ is damaged"):
        shards.merge_shards(work, 3, out, jobs=1)
    assert tree_digest(out) == before
    with pytest.raises(SourceError):
        shards.plan_step(tmp_path / "nowhere", tmp_path / "w3", jobs=1)


def test_a_sharded_build_over_a_served_bundle_equals_a_full_build_over_it(
    tmp_path: Path, served: tuple[Path, Path, dict[str, str]]
) -> None:
    """Over a bundle, the merge keeps the one it replaces for rollback and starts a new
    change-feed lineage exactly as `--full` does."""
    src, out, _ = served
    files = corpus(8, 30)
    files["part0.jsonl"] = [*files.get("part0.jsonl", []), good("new-1")]
    write_tree(src, files)
    full, many = tmp_path / "full", tmp_path / "many"
    shutil.copytree(out, full)
    shutil.copytree(out, many)
    builder.build_report(src, full, jobs=1, full=True)
    sharded(src, tmp_path / "work", many, 2, [1, 0])
    assert output_files(many) == output_files(full)
    assert (many / "manifest.previous.json").read_bytes() == (out / "manifest.json").read_bytes()
