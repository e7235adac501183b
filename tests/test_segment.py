"""One segment reader (app.bundle.segment) for the server and the builder: each accessor
says what the source records say, and a segment whose records do not match their offsets is
refused."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from app import surrogate_keys
from app.bundle import format as fmt
from app.bundle.errors import BundleError
from app.bundle.heads import Heads, http_dates
from app.bundle.manifest import Segment, segment_entry
from app.bundle.objects import ObjectStore, map_file
from app.bundle.reader import Bundle
from app.bundle.segment import SegmentReader
from app.languages import LANGUAGES


def _micros(stamp: str) -> int:
    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return int(moment.timestamp()) * 1_000_000 + moment.microsecond


def _segments(out: Path, language: str) -> list[Segment]:
    manifest = orjson.loads((out / fmt.MANIFEST).read_bytes())
    return [segment_entry(d) for d in manifest["languages"][language]["segments"]]


def test_accessors_say_what_the_source_records_say(
    bundle: tuple[Path, str], records: list[dict[str, Any]]
) -> None:
    out = bundle[0]
    store = ObjectStore(out)
    loaded = Bundle.load(out)
    source = {(r["language"], r["id"]): r for r in records}
    seen = 0
    for language in LANGUAGES:
        served = loaded.languages[language].segments
        for n, desc in enumerate(_segments(out, language)):
            # The builder maps from the store; the server reads the views it loaded.
            for segment in (SegmentReader(store, desc), served[n]):
                ids = segment.ids()
                stories = segment.stories()
                categories = segment.categories()
                published = segment.published()
                assert len(ids) == len(stories) == len(categories) == segment.docs
                for i in range(segment.docs):
                    article = orjson.loads(segment.record(i))
                    record = source[language, article["id"]]
                    assert ids[i] == segment.id_at(i) == article["id"].encode()
                    assert categories[i] == record["category"]
                    assert published[i] == _micros(record["published_at"])
                    assert segment.updated[i] == _micros(article["updated_at"])
                    assert stories[i] == (record.get("story_id") or "").encode()
                    tag = segment.etags[i * fmt.ETAG_BYTES : (i + 1) * fmt.ETAG_BYTES]
                    assert tag == hashlib.blake2b(segment.record(i), digest_size=16).digest()
                joined = b",".join(bytes(segment.record(i)) for i in range(segment.docs))
                assert segment.encoded_run("articles", "identity", 0, segment.docs) == joined
                everyone = np.ones(segment.docs, dtype=bool)
                assert segment.with_story(everyone) == [
                    (i, story) for i, story in enumerate(stories) if story
                ]
                seen += segment.docs
    assert seen == 2 * len(records)  # every article, read both ways
    assert any(r.get("story_id") for r in records)


def test_records_that_do_not_match_their_offsets_are_refused(bundle: tuple[Path, str]) -> None:
    out = bundle[0]
    store = ObjectStore(out)
    desc = _segments(out, "en")[0]
    views = {obj: map_file(store.path(obj)) for obj in desc.files.values()}
    offsets = desc.files[fmt.ARTICLES_OFF]
    views[offsets] = views[offsets][:-8]  # one uint64 offset short
    with pytest.raises(BundleError, match="offsets do not match the data"):
        SegmentReader(views, desc, "language en segment 0")


def test_a_heads_file_of_the_wrong_size_is_refused_by_name(bundle: tuple[Path, str]) -> None:
    out = bundle[0]
    store = ObjectStore(out)
    desc = _segments(out, "en")[0]
    views = {obj: map_file(store.path(obj)) for obj in desc.files.values()}
    views[desc.files[fmt.HEADS]] = views[desc.files[fmt.HEADS]][:-1]
    with pytest.raises(BundleError, match=r"language en segment 0/heads.txt: size does not match"):
        Heads(views[desc.files[fmt.HEADS]], "en", desc.docs, "language en segment 0")


def test_heads_are_what_a_request_would_compute(bundle: tuple[Path, str]) -> None:
    """The header values the builder writes per article (app.bundle.heads) are the ETag, the
    Last-Modified and the Surrogate-Key computed from the article itself."""
    loaded = Bundle.load(bundle[0])
    seen = 0
    for language in LANGUAGES:
        for segment in loaded.languages[language].segments:
            heads = segment.heads
            assert heads is not None
            for i, article_id in enumerate(segment.ids()):
                etag, modified, keys = heads.of(i)
                tag = segment.etags[i * fmt.ETAG_BYTES : (i + 1) * fmt.ETAG_BYTES].hex()
                assert etag == f'"{tag}"'
                moment = datetime.fromtimestamp(segment.updated[i] // 1_000_000, UTC)
                assert modified == format_datetime(moment, usegmt=True)
                assert keys == surrogate_keys.article(language, article_id.decode())
                seen += 1
    assert seen


def test_http_dates_are_format_datetime_to_the_second() -> None:
    """The vectorised HTTP-dates over datetime's whole range, negative times included."""
    rng = np.random.default_rng(7)
    low, high = -62135596800 * 1_000_000, 253402300799 * 1_000_000 + 999_999
    micros = np.concatenate(
        [rng.integers(low, high, 20_000), [low, high, -1, 0, 1, 999_999, -1_000_000]]
    )
    text = http_dates(micros).tobytes().decode("ascii")
    width = len(text) // micros.size
    for i, value in enumerate(micros.tolist()):
        moment = datetime.fromtimestamp(value // 1_000_000, UTC)
        assert text[i * width : (i + 1) * width] == format_datetime(moment, usegmt=True)
