"""Which words of a Latin-language index, and which runs of a Korean one, have their adjacent
pairs posted (docs/search.md, "Frequent-word pairs").

A phrase is proven from word positions, and the positions of a word that occurs many times
in every article are most of a large index's positions: an ``OR`` of phrases of such words
decoded tens of millions of them. Two listed words at adjacent positions of an article are
posted once as a *pair term* (app/search/analyzers.py ``Analyzer.pair_key``), so such a
phrase is one posting list, like a plain word.

Korean separates its words with spaces, and a phrase of two frequent words (``"정부가
발표했다"``) was proven from the positions of their trigrams, as many as the words'
occurrences. In Korean the list holds frequent *runs* (space-separated words, as typed), and a
pair term is posted for every run gap whose run before it ends with one listed run and whose
run after it starts with another: exactly the documents where that two-run phrase occurs.
Japanese runs are clauses (words run together between punctuation), so a Japanese index lists
the frequent 2- and 3-character ends and starts of runs at run gaps (`から` ending a run,
`政府` starting the next), and posts their pairs the same way.

The list is the archive's own, chosen when a language's index is built from scratch and
stored in every segment's ``search.meta`` (``pair_words``): the language's function words
(FREQUENT_WORDS, which real text always repeats; none for Korean), then every stem (Korean:
run) that occurs at least MIN_PER_ARTICLE times an article in a sample of the archive, most
frequent first, up to MAX_PAIR_WORDS in all. Incremental builds keep the list of the bundle
they build on (every segment of a language must have the same one: merges copy pair postings
as they are), so it changes only with a ``--full`` build (docs/publishing.md). A word left
out costs a proof over its positions; with at most MIN_PER_ARTICLE an article on average,
those are no more than the archive's articles, which bounds the proof (docs/search.md,
"Cost model").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.search.analyzers import Analyzer, normalize

# The function words of each Latin language, listed whatever the sample says.
FREQUENT_WORDS: dict[str, str] = {
    "en": "the of and to a in is that for it as was with be by on not he this are or his "
    "from at which but have an they you were her she there been one all we their has would",
    "fr": "de la le et les des en un une du est que pour dans qui au par sur pas plus ne se "
    "a il ce sont aux avec son sa ses ou elle nous",
    "de": "der die und in den von zu das mit sich des auf für ist im dem nicht ein eine als "
    "auch es an werden aus er hat dass sie nach bei",
    "es": "de la que el en y a los del se las por un para con no una su al lo como más pero "
    "sus le ha me si sin sobre este ya",
    "it": "di e il la che a in per un del è non le una con i da dei si al della come più "
    "anche gli ha nel ma alla sono",
}
# The languages with pair terms. Chinese has none: its runs are folded (zh_fold) after the
# builder reads them, and its phrases of runs apart cost ~3 x a plain query
# (docs/search.md, "At 9 x 100,000").
PAIR_LANGUAGES = frozenset(FREQUENT_WORDS) | {"ko", "ja"}
# A stem is listed when it occurs at least this many times an article of the sample.
MIN_PER_ARTICLE = 0.25
# At most this many words: their pairs are at most MAX_PAIR_WORDS ** 2 terms, and the
# index numbers them in 21-bit fields of the pair key.
MAX_PAIR_WORDS = 128
# The builder chooses from at most this many articles of a language, evenly spread.
SAMPLE_ARTICLES = 2000


def choose(
    analyzer: Analyzer, stems: Sequence[str], counts: np.ndarray, articles: int
) -> tuple[str, ...]:
    """The pair words of the analyser's language: the stems of its FREQUENT_WORDS, then the
    ``stems`` (Korean: runs) whose ``counts`` (their occurrences in ``articles`` articles)
    reach MIN_PER_ARTICLE an article, most frequent first (ties by stem), up to
    MAX_PAIR_WORDS. Deterministic: same counts, same list. Empty outside PAIR_LANGUAGES."""
    if analyzer.language not in PAIR_LANGUAGES:
        return ()
    words = FREQUENT_WORDS.get(analyzer.language, "").split()
    folded = [w for raw in words for w in analyzer.token_parts(normalize(raw))[0]]
    chosen = list(dict.fromkeys(analyzer.stem_words(folded))) if folded else []
    listed = set(chosen)
    floor = MIN_PER_ARTICLE * articles
    order = sorted(range(len(stems)), key=lambda i: (-int(counts[i]), stems[i]))
    for i in order:
        if len(chosen) >= MAX_PAIR_WORDS or articles == 0 or counts[i] < floor:
            break
        if stems[i] not in listed:
            chosen.append(stems[i])
            listed.add(stems[i])
    return tuple(chosen[:MAX_PAIR_WORDS])


def sample(count: int, size: int = SAMPLE_ARTICLES) -> list[int]:
    """At most ``size`` indexes of ``count`` items, evenly spread (all when fewer)."""
    if count <= size:
        return list(range(count))
    return [i * count // size for i in range(size)]
