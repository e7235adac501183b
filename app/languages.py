"""The nine supported language codes (docs/api.md §2)."""

LANGUAGES: tuple[str, ...] = ("ko", "en", "zh_cn", "zh_tw", "ja", "fr", "de", "es", "it")
LANGUAGE_SET: frozenset[str] = frozenset(LANGUAGES)
