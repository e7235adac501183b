"""The nine supported language codes (service spec, part 1)."""

LANGUAGES: tuple[str, ...] = ("ko", "en", "zh_cn", "zh_tw", "ja", "fr", "de", "es", "it")
LANGUAGE_SET: frozenset[str] = frozenset(LANGUAGES)
