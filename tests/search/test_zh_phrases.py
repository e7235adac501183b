"""Regional Chinese vocabulary folding (docs/search.md)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.search import zh_tables
from app.search.analyzers import get_analyzer
from app.search.indexer import fold_zh_code_points
from app.search.zh_fold import ZH_PHRASES
from scripts.dev import gen_zh_phrases
from tests.search.conftest import doc, searcher_for

# (Mainland, Taiwan) pairs taken from OpenCC's TWPhrases data; many differ in length.
PAIRS = [
    ("软件", "軟體"), ("网络", "網路"), ("信息", "資訊"), ("打印机", "印表機"),
    ("出租车", "計程車"), ("互联网", "網際網路"), ("以太网", "乙太網路"),
    ("万维网", "全球資訊網"), ("中间件", "中介軟體"), ("信息安全", "資訊安全"),
    ("用户", "使用者"), ("字节", "位元組"), ("主板", "主機板"), ("光驱", "光碟機"),
    ("云计算", "雲端計算"), ("优先级", "優先順序"), ("克罗地亚", "克羅埃西亞"),
    ("瓦努阿图", "萬那杜"), ("莫桑比克", "莫三比克"), ("新泽西", "紐澤西"),
    ("密歇根", "密西根"), ("点击", "點選"), ("状态栏", "狀態列"), ("密钥", "金鑰"),
    ("三极管", "三極體"), ("时钟频率", "時脈頻率"), ("性价比", "價效比"), ("加纳", "迦納"),
    ("利比里亚", "賴比瑞亞"), ("下拉列表", "下拉式清單"), ("全局", "全域性"),
    ("调试器", "偵錯程式"),
]  # fmt: skip
FILLER = "今天天气很好我们去公园散步"


@pytest.mark.parametrize("language", ["zh_cn", "zh_tw"])
def test_query_in_one_regional_form_finds_article_in_the_other_through_the_index(
    language: str,
) -> None:
    # One article per pair and form, the word embedded in running text: the Mainland query
    # must find the Taiwan article and vice versa (ids 2i and 2i+1).
    docs = []
    for mainland, taiwan in PAIRS:
        docs.append(doc(f"{FILLER}{mainland}{FILLER}"))
        docs.append(doc("", "", f"{FILLER}{taiwan}的新闻{FILLER}"))
    searcher = searcher_for(language, docs)
    for i, (mainland, taiwan) in enumerate(PAIRS):
        for query in (mainland, taiwan, f"{taiwan}的新聞", f"散步{mainland}"):
            _total, ids = searcher.search(query, 0, 100)
            found = set(ids)
            if query.endswith("新聞"):  # only the article that has the word before 的新闻
                assert 2 * i + 1 in found and 2 * i not in found, (query, ids)
            else:  # a shorter pair may also occur inside a longer one (信息 in 信息安全)
                assert {2 * i, 2 * i + 1} <= found, (query, ids)


def test_longer_phrase_proof_uses_folded_positions() -> None:
    # 全球資訊網 (5 chars) folds to 万维网 (3): a 6-character query run over the fold must be
    # proven from trigram positions of the folded text, and a scrambled order must not match.
    searcher = searcher_for("zh_tw", [doc("", "", "歡迎使用全球資訊網服務"), doc("网服务万维欢迎")])
    assert searcher.search("使用万维网服务", 0, 10) == (1, [0])
    assert searcher.search("使用萬維網服務", 0, 10) == (1, [0])


def test_regenerating_from_pinned_opencc_gives_committed_table() -> None:
    pytest.importorskip("opencc")
    committed = "".join(zh_tables.read_lines(zh_tables.PHRASES_FILE))
    assert gen_zh_phrases.render(gen_zh_phrases.derive_pairs()).endswith(committed)
    assert gen_zh_phrases.derive_pairs() == ZH_PHRASES
    assert zh_tables.PHRASE_PAIRS.count("\n") == len(ZH_PHRASES)


@pytest.mark.parametrize("language", ["zh_cn", "zh_tw"])
@pytest.mark.parametrize(("mainland", "taiwan"), PAIRS)
def test_both_regional_forms_give_the_same_query_terms(
    language: str, mainland: str, taiwan: str
) -> None:
    analyzer = get_analyzer(language)
    assert analyzer.analyze_query(mainland) == analyzer.analyze_query(taiwan)
    assert analyzer.fold_cjk(f"我们的{taiwan}很好") == f"我们的{mainland}很好"


def test_folding_is_idempotent_over_the_whole_table() -> None:
    analyzer = get_analyzer("zh_cn")
    for src in ZH_PHRASES:
        once = analyzer.fold_cjk(src)
        assert analyzer.fold_cjk(once) == once


_ALPHABET = sorted({ch for phrase in ZH_PHRASES for ch in phrase} | set("軟體網路資訊\n"))


@given(st.lists(st.text(alphabet=_ALPHABET, max_size=30), max_size=6))
@settings(max_examples=300, deadline=None)
def test_vectorised_index_folding_equals_the_query_side_fold(pieces: list[str]) -> None:
    # The indexer folds all pieces at once (numpy + regex at candidates only); it must give
    # exactly what the analyser gives a query, piece by piece.
    analyzer = get_analyzer("zh_tw")
    lengths = np.array([len(p) for p in pieces], dtype=np.int64)
    cps = np.frombuffer("".join(pieces).encode("utf-32-le"), dtype="<u4")
    folded, new_lengths = fold_zh_code_points(cps, lengths)
    want = [analyzer.fold_cjk(p) for p in pieces]
    assert new_lengths.tolist() == [len(p) for p in want]
    assert folded.tobytes().decode("utf-32-le") == "".join(want)
