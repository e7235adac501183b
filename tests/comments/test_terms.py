"""Moderation term lists (app/comments/terms.py): the matcher against a brute-force oracle in
every language, the normalisation, reloading and the bounds on list files.

The oracle shares nothing with the module: its fold is unicodedata and a dict, and it tries
every position of the folded text with the boundary rule written out again.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.comments import terms
from app.comments.terms import MAX_FILE_BYTES, MAX_TERM_CHARS, TermLists, Verdict, fold
from app.languages import LANGUAGES
from app.search.zh_fold import ZH_FOLD

LATIN = ("en", "fr", "de", "es", "it")
CJK = ("ko", "ja", "zh_cn", "zh_tw")
INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"


# --- the oracle -------------------------------------------------------------------------------
def ref_fold(language: str, text: str) -> str:
    text = "".join(c for c in text if c not in INVISIBLE)
    text = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    if language in ("zh_cn", "zh_tw"):
        text = "".join(chr(ZH_FOLD.get(ord(c), ord(c))) for c in text)
    return text


def ref_word_char(char: str) -> bool:
    return char.isalnum() or unicodedata.category(char).startswith("M")


def ref_matches(language: str, line: str, text: str) -> bool:
    """Whether list line `line` matches `text`, by trying every position of the text."""
    term = ref_fold(language, line).strip()
    prefix = term.endswith("*")
    words = term.rstrip("* ").split()
    if not words:
        return False
    latin = language in LATIN
    prefix = prefix and latin
    text = ref_fold(language, text)
    for start in range(len(text)):
        if latin and start > 0 and ref_word_char(text[start - 1]):
            continue
        at = start
        for number, word in enumerate(words):
            if number:  # one or more whitespace characters between the words
                if at >= len(text) or not text[at].isspace():
                    break
                while at < len(text) and text[at].isspace():
                    at += 1
            if not text.startswith(word, at):
                break
            at += len(word)
        else:
            if latin and not prefix and at < len(text) and ref_word_char(text[at]):
                continue
            return True
    return False


def ref_verdict(language: str, banned: list[str], suspect: list[str], texts: list[str]):
    if any(ref_matches(language, t, x) for t in banned for x in texts):
        return "banned"
    if any(ref_matches(language, t, x) for t in suspect for x in texts):
        return "suspect"
    return None


# --- generated lists and texts ----------------------------------------------------------------
# Small alphabets, so that random text and random terms meet often.
LATIN_LETTERS = "aeinsßéıi" + "AEINSẞÉIİ" + "ﬁ"  # ß/ẞ -> ss, İ -> i + U+0307, ı stays, ﬁ -> fi
HANGUL = "바보멍청이야개새끼놈"
JAPANESE = "ばかあほしねバカアホ死後后葉叶乾幹干ｱﾎﾊﾞｶ"  # half-width kana: NFKC
# (traditional, simplified) pairs from OpenCC's table, and characters that are the same in both.
ZH_PAIRS = [(chr(t), chr(s)) for t, s in list(ZH_FOLD.items())[::97][:40]] + [
    ("這", "这"),
    ("個", "个"),
    ("說", "说"),
]
ZH_SAME = "你我傻瓜的是"
SCRIPT = {
    **dict.fromkeys(LATIN, LATIN_LETTERS + "0"),
    "ko": HANGUL + "ab",
    "ja": JAPANESE + "a",
    "zh_cn": "".join(s for _t, s in ZH_PAIRS) + ZH_SAME + "a",
    "zh_tw": "".join(t for t, _s in ZH_PAIRS) + ZH_SAME + "a",
}
TO_TRADITIONAL = {s: t for t, s in ZH_PAIRS}
TO_SIMPLIFIED = {t: s for t, s in ZH_PAIRS}
SEPARATORS = [" ", "  ", "\n", "\t", "\u3000", "\u00a0", "\u2028", ",", "'", "-", "_", ".", "!"]


def full_width(char: str) -> str:
    return chr(ord(char) + 0xFEE0) if "!" <= char <= "~" else char


@st.composite
def list_line(draw: st.DrawFn, language: str) -> str:
    """A term as a newsroom would write it: one to three words, maybe a prefix term."""
    word = st.text(alphabet=SCRIPT[language], min_size=1, max_size=3)
    words = draw(st.lists(word, min_size=1, max_size=3 if language in LATIN else 2))
    line = draw(st.sampled_from([" ", "  ", "\t"])).join(words)
    if draw(st.integers(0, 3)) == 0:
        line += draw(st.sampled_from(["*", "*", "*", "**", " *", "* *"]))
    return line


@st.composite
def variant(draw: st.DrawFn, language: str, text: str) -> str:
    """The same text as a commenter might disguise it: case, full width, the other Chinese
    script, invisible characters and soft hyphens between letters."""
    out = []
    for char in text:
        how = draw(st.integers(0, 7))
        if how == 0:
            char = char.upper()
        elif how == 1:
            char = full_width(char)
        elif how == 2:
            char = TO_TRADITIONAL.get(char, TO_SIMPLIFIED.get(char, char))
        out.append(char)
        if draw(st.integers(0, 5)) == 0:
            out.append(draw(st.sampled_from(INVISIBLE)))
    return "".join(out)


@st.composite
def comment(draw: st.DrawFn, language: str, lines: list[str]) -> str:
    """Text of the language's script with list terms (disguised) inserted."""
    pieces = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.integers(0, 3))
        if kind == 0 and lines:
            line = draw(st.sampled_from(lines)).rstrip("*")
            if language in LATIN and draw(st.booleans()):
                line += draw(st.text(alphabet=SCRIPT[language], max_size=2))
            pieces.append(draw(variant(language, line)))
        elif kind == 1:
            pieces.append(draw(st.sampled_from(SEPARATORS)))
        else:
            chunk = draw(st.text(alphabet=SCRIPT[language], max_size=5))
            pieces.append(draw(variant(language, chunk)))
    return "".join(pieces)


PROPERTY = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def write_lists(directory: Path, language: str, banned: list[str], suspect: list[str]) -> None:
    (directory / f"{language}.banned").write_text("\n".join(banned) + "\n", encoding="utf-8")
    (directory / f"{language}.suspect").write_text("\n".join(suspect) + "\n", encoding="utf-8")


@pytest.mark.parametrize("language", LANGUAGES)
@PROPERTY
@given(data=st.data())
def test_verdict_equals_the_oracle(language: str, data: st.DataObject) -> None:
    banned = data.draw(st.lists(list_line(language), max_size=4), label="banned")
    suspect = data.draw(st.lists(list_line(language), max_size=4), label="suspect")
    texts = data.draw(st.lists(comment(language, banned + suspect), min_size=1, max_size=2))
    with tempfile.TemporaryDirectory() as name:
        write_lists(Path(name), language, banned, suspect)
        lists = TermLists(Path(name))
        assert lists.verdict(language, *texts) == ref_verdict(language, banned, suspect, texts)
        # each text alone, and another language's lists do not apply
        for text in texts:
            assert lists.verdict(language, text) == ref_verdict(language, banned, suspect, [text])
        other = "en" if language != "en" else "ko"
        assert lists.verdict(other, *texts) is None


# --- fold -------------------------------------------------------------------------------------
ANY_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(INVISIBLE + LATIN_LETTERS + HANGUL + JAPANESE + "".join(TO_SIMPLIFIED)),
        st.sampled_from(["\u0301", "\u0307", "\u0345", "\u0308", "ǰ", "ΐ", "ﬃ", "①", "㍻"]),
    ),
    max_size=80,
)
# Dense in the corners: letters, combining marks and invisible characters side by side.
CORNER_TEXT = st.text(alphabet="eEiIİıßẞﬁ\u0301\u0307\u0345Ωω" + INVISIBLE + "這这", max_size=12)


@pytest.mark.parametrize("language", LANGUAGES)
@settings(max_examples=300, deadline=None)
@given(text=st.one_of(ANY_TEXT, CORNER_TEXT))
def test_fold_is_the_reference_fold_and_idempotent(language: str, text: str) -> None:
    folded = fold(language, text)
    assert folded == ref_fold(language, text)
    assert fold(language, folded) == folded
    # the long-text path of the Chinese fold (an array) as well as the short one
    long = "說" * 64 + text
    assert fold(language, long) == ref_fold(language, long)


def test_no_fold_step_brings_back_what_an_earlier_one_removed() -> None:
    """Why fold is idempotent: NFKC and case folding never yield an invisible character, and
    the Chinese table has no chains and targets that NFKC and case folding leave alone."""
    for code in range(0x110000):
        if 0xD800 <= code < 0xE000:
            continue
        char = chr(code)
        folded = unicodedata.normalize("NFKC", char).casefold()
        if not folded.isascii():
            assert not any(c in INVISIBLE for c in folded) or char in INVISIBLE, hex(code)
    for target in ZH_FOLD.values():
        assert target not in ZH_FOLD
        char = chr(target)
        assert unicodedata.normalize("NFKC", char) == char == char.casefold()


def test_the_chinese_fold_takes_the_whole_table() -> None:
    traditional = "".join(map(chr, ZH_FOLD))  # long: the array path
    simplified = "".join(map(chr, ZH_FOLD.values()))
    assert fold("zh_tw", traditional) == simplified == fold("zh_cn", traditional)
    assert [fold("zh_cn", c) for c in traditional] == list(simplified)  # the short path


def test_the_compatibility_premap_leaves_nfkc_as_it_is() -> None:
    """fold maps characters whose NFKD is one character before NFKC (a shortcut): over every
    character of planes 0 to 2, alone, before a combining mark and after a letter, the result
    is NFKC's. The array path (long text) and the translate path (short) alike."""
    chars = [chr(c) for c in range(0x80, 0x30000) if not 0xD800 <= c < 0xE000]
    for text in (
        "".join(chars),
        "".join(c + "\u0301" for c in chars),
        "".join("a" + c for c in chars),
    ):
        assert fold("en", text) == ref_fold("en", text)
    for char in chars[::7]:
        assert fold("en", char + "\u3099") == ref_fold("en", char + "\u3099")


def test_fold_examples() -> None:
    assert fold("en", "ＳＴＲＡẞＥ") == "strasse" == fold("de", "Straße")
    assert fold("en", "i\u200bd\u00adi\u2060o\ufefft\u200c\u200d") == "idiot"
    assert fold("tr", "İ") == "i\u0307"  # Turkish capital dotted I: i + combining dot
    assert fold("en", "ı") == "ı"  # dotless i stays dotless
    assert fold("en", "e\u200b\u0301") == "é"  # invisible removed before NFKC composes
    assert fold("zh_tw", "這個說") == "这个说" == fold("zh_cn", "這個说")
    assert fold("ja", "這個") == "這個"  # Japanese is not folded to simplified
    assert fold("ja", "ﾊﾞｶ") == "バカ"
    assert fold("en", "𝐢𝐝𝐢𝐨𝐭 ｉｄｉｏｔ") == "idiot idiot"  # mathematical bold, full width


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.sampled_from([*SEPARATORS, "a", "가", "\x1c", "\x85", "\u1680", "\r"])))
def test_whitespace_runs_become_one_space(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert terms.prepare("ko", text) == " ".join(ref_fold("ko", text).split())


def test_word_characters_are_letters_digits_and_marks() -> None:
    word = terms.is_word_char
    assert all(word(c) for c in "aZ9éß\u0307\u0301ı가あ漢٣")
    assert not any(word(c) for c in " _-'’.,!?\n\t\u3000*#")


# --- matching rules, by example ----------------------------------------------------------------
@pytest.fixture
def lists_dir(tmp_path: Path) -> Path:
    write_lists(tmp_path, "en", ["idiot", "buy now", "scum*"], ["moron"])
    write_lists(tmp_path, "fr", ["connard"], ["idiot*"])
    write_lists(tmp_path, "ko", ["바보", "개새끼"], ["멍청이"])
    write_lists(tmp_path, "ja", ["死ね", "バカ*"], ["アホ"])
    write_lists(tmp_path, "zh_cn", ["傻瓜", "这个人"], [])
    write_lists(tmp_path, "zh_tw", ["說謊"], ["笨蛋"])
    return tmp_path


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        ("en", "You IDIOT!", "banned"),
        ("en", "l'idiot,", "banned"),
        ("en", "idiots and idiotic", None),  # whole words only
        ("en", "semi_idiot", "banned"),  # "_" separates words
        ("en", "xidiot", None),
        ("en", "Ｉｄｉｏｔ", "banned"),  # full width
        ("en", "id\u00adi\u200bot", "banned"),  # soft hyphen, zero width space
        ("en", "scumbags", "banned"),  # prefix term
        ("en", "ascum", None),
        ("en", "BUY\n\t now", "banned"),  # whitespace between the words of a term
        ("en", "buy-now, buy, now, buynow", None),  # punctuation is not whitespace
        ("en", "buy nowhere", None),
        ("en", "a moron", "suspect"),
        ("en", "a moron and an idiot", "banned"),  # a suspect term found first
        ("fr", "Quel CONNARD", "banned"),
        ("fr", "idiote", "suspect"),
        ("ko", "이 바보야", "banned"),  # substring: particles attach to the word
        ("ko", "개새끼들", "banned"),
        ("ko", "멍청이", "suspect"),
        ("ja", "お前は死ねばいい", "banned"),
        ("ja", "ﾊﾞｶ", "banned"),  # half-width katakana
        ("ja", "ｱﾎだ", "suspect"),
        ("zh_cn", "你是傻瓜", "banned"),
        ("zh_cn", "這個人", "banned"),  # traditional text, simplified term
        ("zh_tw", "他说谎", "banned"),  # simplified text, traditional term
        ("zh_tw", "笨蛋", "suspect"),
        ("ja", "傻瓜", None),  # the zh lists do not apply to ja
    ],
)
def test_examples(lists_dir: Path, language: str, text: str, expected: Verdict | None) -> None:
    assert TermLists(lists_dir).verdict(language, text) == expected


def test_verdict_over_several_texts(lists_dir: Path) -> None:
    lists = TermLists(lists_dir)
    assert lists.verdict("en", "Mina", "a moron") == "suspect"
    assert lists.verdict("en", "a moron", "idiot") == "banned"
    assert lists.verdict("en", "idiot", "a moron") == "banned"
    assert lists.verdict("en") is None
    assert lists.verdict("en", "", "fine") is None
    assert lists.verdict("xx", "idiot") is None


def test_a_term_in_both_lists_is_banned_and_prefix_and_whole_share_a_key(tmp_path: Path) -> None:
    write_lists(tmp_path, "en", ["idiot", "fool"], ["idiot", "fool*"])
    lists = TermLists(tmp_path)
    assert lists.verdict("en", "idiot") == "banned"
    assert lists.verdict("en", "fool") == "banned"
    assert lists.verdict("en", "foolish") == "suspect"
    assert lists.sizes()["en"] == (2, 2)


def test_comment_and_blank_lines_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "en.banned").write_text(
        "\ufeff# idiot\n\n   \n  # moron\r\nfool\r\n\u200b\n*\n", encoding="utf-8"
    )
    lists = TermLists(tmp_path)
    assert lists.sizes()["en"] == (1, 0)  # "\u200b" and "*" are empty once folded
    assert lists.verdict("en", "idiot moron # idiot") is None
    assert lists.verdict("en", "fool") == "banned"


def test_without_a_directory_nothing_matches() -> None:
    lists = TermLists(None)
    assert lists.verdict("en", "anything") is None
    assert lists.sizes() == {}


def test_sizes_name_every_language(lists_dir: Path) -> None:
    sizes = TermLists(lists_dir).sizes()
    assert set(sizes) == set(LANGUAGES)
    assert sizes["en"] == (3, 1)
    assert sizes["zh_cn"] == (2, 0)
    assert sizes["de"] == (0, 0)


# --- reloading --------------------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def rewrite(path: Path, text: str) -> None:
    """Write and move the mtime on, as a later edit would (however coarse the clock)."""
    mtime = path.stat().st_mtime_ns if path.exists() else time.time_ns()
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(mtime + 10**9, mtime + 10**9))


def test_a_changed_file_is_reloaded_after_the_check_interval(tmp_path: Path) -> None:
    write_lists(tmp_path, "en", ["idiot"], [])
    clock = Clock()
    lists = TermLists(tmp_path, check_seconds=1.0, clock=clock)
    assert lists.verdict("en", "idiot") == "banned"
    rewrite(tmp_path / "en.banned", "moron\n")
    clock.now += 0.5
    assert lists.verdict("en", "moron") is None  # not looked at yet
    clock.now += 0.5
    assert lists.verdict("en", "moron") == "banned"
    assert lists.verdict("en", "idiot") is None
    # a file that appears, then one that vanishes
    rewrite(tmp_path / "ko.suspect", "바보\n")
    clock.now += 1
    assert lists.verdict("ko", "바보야") == "suspect"
    (tmp_path / "en.banned").unlink()
    clock.now += 1
    assert lists.verdict("en", "moron") is None
    assert lists.sizes()["en"] == (0, 0)


def test_reload_with_the_real_clock(tmp_path: Path) -> None:
    write_lists(tmp_path, "de", ["dummkopf"], [])
    lists = TermLists(tmp_path, check_seconds=0.05)
    assert lists.verdict("de", "Du Dummkopf") == "banned"
    rewrite(tmp_path / "de.banned", "trottel\n")
    time.sleep(0.2)
    assert lists.verdict("de", "Du Trottel") == "banned"
    assert lists.verdict("de", "Du Dummkopf") is None


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"idiot\n\xff\xfe broken\n", "not UTF-8"),
        (b"x" * (MAX_FILE_BYTES + 1), f"over {MAX_FILE_BYTES} bytes"),
    ],
)
def test_a_bad_file_keeps_the_previous_list(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, content: bytes, reason: str
) -> None:
    write_lists(tmp_path, "en", ["fool"], ["moron"])
    clock = Clock()
    lists = TermLists(tmp_path, clock=clock)
    path = tmp_path / "en.banned"
    mtime = path.stat().st_mtime_ns + 10**9
    path.write_bytes(content)
    os.utime(path, ns=(mtime, mtime))
    clock.now += 1
    with caplog.at_level(logging.ERROR, logger="app.comments.terms"):
        assert lists.verdict("en", "fool") == "banned"
        assert lists.verdict("en", "moron") == "suspect"
        clock.now += 1
        lists.verdict("en", "fool")  # the same bad version is not read (nor logged) again
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert str(path) in errors[0] and reason in errors[0]
    rewrite(path, "idiot\n")  # fixed: loaded
    clock.now += 1
    assert lists.verdict("en", "fool") is None
    assert lists.verdict("en", "idiot") == "banned"


def test_a_long_term_is_skipped_with_its_file_and_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "en.suspect").write_text(
        "fool\n" + "a" * (MAX_TERM_CHARS + 1) + "\n" + "b" * MAX_TERM_CHARS + "\n",
        encoding="utf-8",
    )
    with caplog.at_level(logging.WARNING, logger="app.comments.terms"):
        lists = TermLists(tmp_path)
    assert lists.sizes()["en"] == (0, 2)
    assert lists.verdict("en", "b" * MAX_TERM_CHARS) == "suspect"
    warnings = [r.getMessage() for r in caplog.records]
    assert any(f"{tmp_path / 'en.suspect'} line 2" in w for w in warnings), warnings


def test_unknown_languages_are_warned_about_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "tr.banned").write_text("aptal\n", encoding="utf-8")
    (tmp_path / "README").write_text("not a list\n", encoding="utf-8")
    clock = Clock()
    with caplog.at_level(logging.WARNING, logger="app.comments.terms"):
        lists = TermLists(tmp_path, clock=clock)
        clock.now += 5
        assert lists.verdict("tr", "aptal") is None
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "tr.banned" in warned[0], warned


def test_threads_read_while_the_lists_change(tmp_path: Path) -> None:
    write_lists(tmp_path, "en", ["idiot"], [])
    lists = TermLists(tmp_path, check_seconds=0.001)
    failures: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        try:
            while not stop.is_set():
                assert lists.verdict("en", "an idiot") in ("banned", None)
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=read) for _ in range(2)]
    for thread in threads:
        thread.start()
    for n in range(12):
        rewrite(tmp_path / "en.banned", "idiot\n" if n % 2 else "moron\n" * (n + 1))
        time.sleep(0.005)
    stop.set()
    for thread in threads:
        thread.join()
    assert not failures
