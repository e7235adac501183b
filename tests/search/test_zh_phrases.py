"""Regional Chinese vocabulary folding (issue 12, part A)."""

from __future__ import annotations

import pytest

from app.search import gen_zh_phrases
from app.search.analyzers import ZH_PHRASES, get_analyzer
from app.search.zh_phrase_data import PHRASE_PAIRS

# (Mainland, Taiwan) pairs taken from OpenCC's TWPhrases data.
PAIRS = [
    ("软件", "軟體"), ("网络", "網路"), ("信息", "資訊"), ("打印机", "印表機"),
    ("出租车", "計程車"), ("互联网", "網際網路"), ("以太网", "乙太網路"),
    ("万维网", "全球資訊網"), ("中间件", "中介軟體"), ("信息安全", "資訊安全"),
    ("信息技术", "資訊科技"), ("移动网络", "行動網路"), ("城域网", "都會網路"),
]  # fmt: skip


def test_regenerating_from_pinned_opencc_gives_committed_table() -> None:
    pytest.importorskip("opencc")
    assert gen_zh_phrases.render(gen_zh_phrases.derive_pairs()).endswith(
        f"PHRASE_PAIRS = (\n{gen_zh_phrases.render(ZH_PHRASES).split('PHRASE_PAIRS = (')[1][1:]}"
    )
    assert gen_zh_phrases.derive_pairs() == ZH_PHRASES
    assert PHRASE_PAIRS.count("\n") == len(ZH_PHRASES)


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
