"""Deterministic synthetic news corpus for the benchmark (source format: docs/api.md §6).

Writes one ``<lang>.jsonl`` per language plus ``urls/*.txt``: the fixed URL lists that the wrk
scripts cycle (the mixed load and each endpoint alone), built from ids, categories and words that
really occur in the corpus. The same arguments always give byte-identical files.

    python bench/gen_corpus.py --out DIR [--per-language 10000] [--seed 1]
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import quote

import orjson

LANGUAGES = ("ko", "en", "zh_cn", "zh_tw", "ja", "fr", "de", "es", "it")
CJK = frozenset({"ko", "zh_cn", "zh_tw", "ja"})

# Sizes in characters (the issue: title ~60, summary ~250, body ~3,000 in 4-6 paragraphs).
TITLE_CHARS, SUMMARY_CHARS, BODY_CHARS = 60, 250, 3000

# Load mix: share of each endpoint in the mixed URL list.
MIX = {"list": 30, "latest": 20, "get": 30, "search": 15, "categories": 5}
MIX_URLS = 2000
ENDPOINT_URLS = 1000

# Vocabularies: common news words. Latin languages list inflected forms side by side so that
# stemming and accent folding have real work to do; earlier words are drawn more often (Zipf).
WORDS: dict[str, str] = {
    "en": """the of and to in a is that for on with as was by said | government election
        elections economy economic market markets minister ministers president policy policies
        year years people city cities country countries report reports reported reporting
        company companies bank banks growth rate rates price prices percent week weeks police
        court courts law laws new public state states official officials support supported
        million billion national international local health hospital hospitals school schools
        student students energy climate change changes changed water project projects plan plans
        planned planning team teams player players match matches season seasons win won
        victory research researchers study studies university technology digital data
        security military border trade agreement talks leaders leader party parties vote votes
        voters campaign budget tax taxes investment investors inflation jobs workers industry
        industrial export exports record records crisis reform reforms housing transport train
        trains airport flights weather storm storms festival museum film films music artist
        artists culture cultural science scientists space mission launch launched discovery
        announced expected according increase increased decline declined rising higher lower
        early later recent major strong global regional community communities council""",
    "fr": """le la les de des du et à en un une est que pour dans sur avec par il elle |
        gouvernement élection élections économie économique économiques marché marchés ministre
        ministres président présidente politique politiques année années ville villes pays
        rapport rapports entreprise entreprises banque banques croissance taux prix semaine
        semaines police tribunal loi lois nouveau nouvelle nouveaux nouvelles public publique
        état officiel officielle million milliards national nationale international
        internationale santé hôpital hôpitaux école écoles étudiant étudiants étudiante énergie
        climat changement changements eau projet projets équipe équipes joueur joueurs match
        saison victoire recherche chercheurs étude études université technologie numérique
        données sécurité militaire frontière commerce accord négociations dirigeants parti
        partis vote électeurs campagne budget impôt impôts investissement inflation emploi
        emplois travailleurs industrie exportations record crise réforme réformes logement
        transport train trains aéroport vols météo tempête festival musée film films musique
        artiste artistes culture culturel culturelle science scientifiques espace mission
        découverte annoncé annoncée annoncées prévu selon hausse baisse été déjà très près
        après région régions société sociétés européen européenne français française""",
    "de": """der die das und in den von zu mit ist im für auf dem des nicht ein eine |
        Regierung Regierungen Wahl Wahlen Wirtschaft wirtschaftlich wirtschaftliche Markt
        Märkte Minister Ministerin Präsident Präsidentin Politik politische Jahr Jahre Jahren
        Stadt Städte Land Länder Bericht Berichte Unternehmen Bank Banken Wachstum Zins Zinsen
        Preis Preise Prozent Woche Wochen Polizei Gericht Gerichte Gesetz Gesetze neue neuen
        öffentlich öffentliche Staat Millionen Milliarden national international Gesundheit
        Krankenhaus Krankenhäuser Schule Schulen Schüler Studenten Energie Klima Wandel
        Änderung Änderungen Wasser Projekt Projekte Mannschaft Spieler Spiel Spiele Saison Sieg
        Forschung Forscher Studie Studien Universität Technologie digital digitale Daten
        Sicherheit Grenze Handel Abkommen Gespräche Partei Parteien Stimme Stimmen Wähler
        Wahlkampf Haushalt Steuer Steuern Investition Investitionen Inflation Arbeitsplätze
        Arbeiter Industrie Exporte Rekord Krise Reform Reformen Wohnungen Verkehr Zug Züge
        Flughafen Flüge Wetter Sturm Stürme Museum Film Filme Musik Künstler Kultur kulturelle
        Wissenschaft Wissenschaftler Raumfahrt Entdeckung angekündigt erwartet laut Anstieg
        Rückgang größer höher niedriger früh später Gemeinde Gemeinden Bürger Bürgerinnen über
        für Straße Straßen Behörde Behörden Verbraucher Kosten""",
    "es": """el la los las de del y en a un una es que por para con se su sus al |
        gobierno elección elecciones economía económico económica mercado mercados ministro
        ministra ministros presidente política políticas año años ciudad ciudades país países
        informe informes empresa empresas banco bancos crecimiento tasa tasas precio precios
        semana semanas policía tribunal ley leyes nuevo nueva nuevos nuevas público pública
        estado oficial millones millón nacional internacional salud hospital hospitales
        escuela escuelas estudiante estudiantes energía clima cambio cambios agua proyecto
        proyectos equipo equipos jugador jugadores partido partidos temporada victoria
        investigación investigadores estudio estudios universidad tecnología digital datos
        seguridad militar frontera comercio acuerdo negociaciones líderes voto votos votantes
        campaña presupuesto impuesto impuestos inversión inversiones inflación empleo empleos
        trabajadores industria exportaciones récord crisis reforma reformas vivienda
        transporte tren trenes aeropuerto vuelos tiempo tormenta festival museo película
        películas música artista artistas cultura cultural ciencia científicos espacio misión
        descubrimiento anunció anunciado previsto según aumento descenso región regiones
        comunidad comunidades también además después pequeño pequeña niños niñas""",
    "it": """il lo la i gli le di del della dei e a in un una è che per con su da al |
        governo elezione elezioni economia economico economica mercato mercati ministro
        ministra ministri presidente politica politiche anno anni città paese paesi rapporto
        rapporti azienda aziende banca banche crescita tasso tassi prezzo prezzi settimana
        settimane polizia tribunale legge leggi nuovo nuova nuovi nuove pubblico pubblica stato
        ufficiale milioni miliardi nazionale internazionale salute ospedale ospedali scuola
        scuole studente studenti energia clima cambiamento cambiamenti acqua progetto progetti
        squadra squadre giocatore giocatori partita partite stagione vittoria ricerca
        ricercatori studio studi università tecnologia digitale dati sicurezza militare
        confine commercio accordo trattative leader partito partiti voto voti elettori
        campagna bilancio tassa tasse investimento investimenti inflazione lavoro lavoratori
        industria esportazioni record crisi riforma riforme casa trasporti treno treni
        aeroporto voli meteo tempesta festival museo film musica artista artisti cultura
        culturale scienza scienziati spazio missione scoperta annunciato previsto secondo
        aumento calo regione regioni comunità perché più già però così città cittadini""",
}

# CJK: nouns and verbs per language; Korean nouns take particles, Japanese nouns take particles
# and sentence endings, Chinese words run together without spaces (as in real text).
CJK_NOUNS: dict[str, str] = {
    "ko": """정부 경제 대통령 국회 선거 시장 기업 은행 금리 물가 수출 투자 주식 부동산 일자리 교육
        학교 학생 대학 연구 기술 과학 인공지능 반도체 자동차 에너지 환경 기후 날씨 태풍 건강 병원
        의료 코로나 백신 경찰 법원 검찰 사건 사고 외교 안보 북한 미국 중국 일본 유럽 회담 협정 정책
        예산 세금 지역 도시 서울 부산 주민 문화 영화 음악 공연 축제 스포츠 축구 야구 선수 경기 시즌
        우승 관광 여행 교통 철도 공항 항공 주택 전기 산업 무역 노동 임금 청년 노인 가족 사회 복지
        인구 출산 언론 방송 인터넷 플랫폼 데이터 보안 우주 발사 위성 발표 계획 회의 결과 조사""",
    "ja": """政府 経済 首相 国会 選挙 市場 企業 銀行 金利 物価 輸出 投資 株価 不動産 雇用 教育 学校
        学生 大学 研究 技術 科学 人工知能 半導体 自動車 エネルギー 環境 気候 天気 台風 健康 病院
        医療 ワクチン 警察 裁判所 事件 事故 外交 安全保障 米国 中国 韓国 欧州 会談 協定 政策 予算
        税金 地域 都市 東京 大阪 住民 文化 映画 音楽 公演 祭り スポーツ サッカー 野球 選手 試合
        シーズン 優勝 観光 旅行 交通 鉄道 空港 航空 住宅 電力 産業 貿易 労働 賃金 若者 高齢者 家族
        社会 福祉 人口 少子化 報道 放送 インターネット データ 宇宙 打ち上げ 衛星 発表 計画 会議 結果
        調査""",
    "zh_cn": """政府 经济 总统 国会 选举 市场 企业 银行 利率 物价 出口 投资 股市 房地产 就业 教育
        学校 学生 大学 研究 技术 科学 人工智能 半导体 汽车 能源 环境 气候 天气 台风 健康 医院 医疗
        疫苗 警方 法院 案件 事故 外交 安全 美国 日本 韩国 欧洲 会谈 协议 政策 预算 税收 地区 城市
        北京 上海 居民 文化 电影 音乐 演出 节日 体育 足球 篮球 球员 比赛 赛季 冠军 旅游 交通 铁路
        机场 航空 住房 电力 产业 贸易 劳动 工资 青年 老人 家庭 社会 福利 人口 媒体 广播 互联网 数据
        航天 发射 卫星 发布 计划 会议 结果 调查 发展 改革 国际 国家 官员 专家""",
    "zh_tw": """政府 經濟 總統 國會 選舉 市場 企業 銀行 利率 物價 出口 投資 股市 房地產 就業 教育
        學校 學生 大學 研究 技術 科學 人工智慧 半導體 汽車 能源 環境 氣候 天氣 颱風 健康 醫院 醫療
        疫苗 警方 法院 案件 事故 外交 安全 美國 日本 韓國 歐洲 會談 協議 政策 預算 稅收 地區 城市
        台北 高雄 居民 文化 電影 音樂 演出 節日 體育 足球 籃球 球員 比賽 賽季 冠軍 旅遊 交通 鐵路
        機場 航空 住房 電力 產業 貿易 勞動 工資 青年 老人 家庭 社會 福利 人口 媒體 廣播 網路 數據
        航太 發射 衛星 發布 計畫 會議 結果 調查 發展 改革 國際 國家 官員 專家""",
}
KO_PARTICLES = (
    ("이", "가"),
    ("은", "는"),
    ("을", "를"),
    ("과", "와"),
    ("으로", "로"),
    ("의", "의"),
    ("에", "에"),
    ("에서", "에서"),
    ("도", "도"),
)
CJK_GLUE: dict[str, str] = {
    "ja": "は が を の に で と も から まで",
    "zh_cn": "的 在 和 对 将 已 与 也 为 了 是 有",
    "zh_tw": "的 在 和 對 將 已 與 也 為 了 是 有",
}
CJK_ENDINGS: dict[str, str] = {
    "ko": "밝혔다. 발표했다. 전했다. 예정이다. 나타났다. 설명했다. 강조했다. 증가했다. 감소했다.",
    "ja": "発表した。 明らかにした。 見通しだ。 増加した。 減少した。 強調した。 予定だ。 伝えた。",
    "zh_cn": "表示。 宣布。 指出。 增加。 下降。 强调。 报道。 透露。",
    "zh_tw": "表示。 宣布。 指出。 增加。 下降。 強調。 報導。 透露。",
}

CATEGORIES: dict[str, tuple[str, ...]] = {
    "ko": (
        "정치",
        "경제",
        "사회",
        "국제",
        "문화",
        "스포츠",
        "과학",
        "기술",
        "건강",
        "연예",
        "생활",
        "교육",
    ),
    "en": (
        "politics",
        "economy",
        "business",
        "world",
        "technology",
        "science",
        "health",
        "sports",
        "culture",
        "entertainment",
        "environment",
        "education",
    ),
    "zh_cn": (
        "政治",
        "经济",
        "社会",
        "国际",
        "文化",
        "体育",
        "科技",
        "健康",
        "娱乐",
        "教育",
        "环境",
        "财经",
    ),
    "zh_tw": (
        "政治",
        "經濟",
        "社會",
        "國際",
        "文化",
        "體育",
        "科技",
        "健康",
        "娛樂",
        "教育",
        "環境",
        "財經",
    ),
    "ja": (
        "政治",
        "経済",
        "社会",
        "国際",
        "文化",
        "スポーツ",
        "科学",
        "テクノロジー",
        "健康",
        "芸能",
        "暮らし",
        "教育",
    ),
    "fr": (
        "politique",
        "économie",
        "société",
        "international",
        "culture",
        "sport",
        "sciences",
        "technologie",
        "santé",
        "environnement",
        "éducation",
        "médias",
    ),
    "de": (
        "Politik",
        "Wirtschaft",
        "Gesellschaft",
        "International",
        "Kultur",
        "Sport",
        "Wissenschaft",
        "Technik",
        "Gesundheit",
        "Umwelt",
        "Bildung",
        "Medien",
    ),
    "es": (
        "política",
        "economía",
        "sociedad",
        "internacional",
        "cultura",
        "deportes",
        "ciencia",
        "tecnología",
        "salud",
        "medio ambiente",
        "educación",
        "opinión",
    ),
    "it": (
        "politica",
        "economia",
        "società",
        "esteri",
        "cultura",
        "sport",
        "scienza",
        "tecnologia",
        "salute",
        "ambiente",
        "istruzione",
        "spettacoli",
    ),
}
AUTHORS: dict[str, tuple[str, ...]] = {
    "ko": ("김민준", "이서연", "박지훈", "최수빈", "정예린"),
    "en": ("Jane Smith", "Michael Brown", "Sarah O'Connor", "David Lee", "Emily Clark"),
    "zh_cn": ("王伟", "李娜", "张磊", "刘洋", "陈静"),
    "zh_tw": ("王偉", "李娜", "張磊", "劉洋", "陳靜"),
    "ja": ("佐藤健", "鈴木花子", "高橋誠", "田中美咲", "伊藤翔"),
    "fr": ("Chloé Dubois", "Léo Martin", "Amélie Lefèvre", "François Girard", "Hélène Roux"),
    "de": ("Jürgen Müller", "Anna Schäfer", "Lukas Weiß", "Sophie Köhler", "Felix Groß"),
    "es": ("María García", "José Martínez", "Lucía Fernández", "Andrés Núñez", "Sofía Peña"),
    "it": ("Giulia Rossi", "Luca Bianchi", "Niccolò Ferri", "Chiara Galli", "Mattia Conti"),
}
# Publication offsets: local newsroom time zones, so normalising to UTC is exercised.
OFFSETS: dict[str, tuple[int, ...]] = {
    "ko": (540,),
    "ja": (540,),
    "zh_cn": (480,),
    "zh_tw": (480,),
    "en": (-300, -240, 0, 60),
    "fr": (60, 120),
    "de": (60, 120),
    "es": (60, 120),
    "it": (60, 120),
}
YEAR_START = datetime(2025, 1, 1, tzinfo=UTC)
YEAR_SECONDS = 365 * 24 * 3600
POOL_SIZE = 1 << 18  # per category

# Ids the API must percent-decode correctly; each replaces a numbered id in every language.
AWKWARD_IDS = (
    "{lang}-spaced id {n}",
    "{lang}-ümlaut%20é-{n}",
    "{lang}-{n}?x=1#frag",
    "{lang}-뉴스:{n}+plus",
    "{lang}-dot.{n}.v2",
    "{lang}-long-{n}-" + "x" * 180,
)


# Proper names are the long tail of a news vocabulary and what readers search for most: each
# language gets ENTITY_COUNT generated names (Zipf-popular), and each article is about a few.
ENTITY_COUNT = 3000
NAME_PARTS: dict[str, tuple[str, str]] = {
    "en": (
        "bar bel bran cor dal el fen gar hal hor ken lan mar mel nor pen ros sel tam vern wal",
        "ton son ford ley field wood",
    ),
    "fr": (
        "bel bé cha cour du fon gé la lou mar mé mon nè pé ra ré rou sau tou va vé",
        "ac ville ier eau ière ençon",
    ),
    "de": (
        "al bau ber brun ek feld gru ha hei kal lin mar mü ost rei ro schö stei tal wal wei",
        "berg mann dorf hausen stadt",
    ),
    "es": (
        "al ba ca cas do es fer gar gu la lo ma mi mo na pe que ri sa to va",
        "ez illa ano eña ón ía",
    ),
    "it": (
        "al bel ca cor do fa fer ga la lu ma mo na pa pi ro sa ta ve vi",
        "ini etti ano ello ese ìa",
    ),
    "ko": (
        "강 경 나 누 다 도 라 리 마 미 바 보 서 세 아 오 자 주 차 초 하 "
        "한 현 혜 민 준 연 지 우 성 진 영 수 호 석 태 동 희 은",
        "시 군 전자 은행",
    ),
    "ja": ("ア イ カ キ サ シ タ チ ナ ニ ハ ヒ マ ミ ラ リ ル レ ロ ン ト ノ モ ヨ", "社 市 銀行"),
    "zh_cn": (
        "华 安 明 江 海 山 东 南 新 兴 德 福 宁 龙 凤 金 银 光 天 云 青 阳 平 和 泰 永 长 春 嘉 瑞 "
        "盛 丰 恒 信 达 远",
        "集团 公司 市 县",
    ),
    "zh_tw": (
        "華 安 明 江 海 山 東 南 新 興 德 福 寧 龍 鳳 金 銀 光 天 雲 青 陽 平 和 泰 永 長 春 嘉 瑞 "
        "盛 豐 恆 信 達 遠",
        "集團 公司 市 縣",
    ),
}


def _zipf(n: int) -> list[float]:
    return [1.0 / (i + 1) ** 0.7 for i in range(n)]


def _has_batchim(word: str) -> bool:
    last = ord(word[-1]) - 0xAC00
    return 0 <= last < 11172 and last % 28 != 0


def _korean_forms(noun: str) -> list[str]:
    # Particles agree with the noun's last syllable (이/가, 은/는, 을/를, 과/와, 으로/로).
    closed = _has_batchim(noun)
    return [noun + (a if closed else b) for a, b in KO_PARTICLES]


def _names(lang: str) -> list[str]:
    syllables, endings = (part.split() for part in NAME_PARTS[lang])
    rng = random.Random(f"names-{lang}")
    names: dict[str, None] = {}
    while len(names) < ENTITY_COUNT:
        name = "".join(rng.choices(syllables, k=rng.randint(2, 3)))
        if rng.random() < 0.35:
            name += rng.choice(endings)
        names[name if lang in CJK else name.capitalize()] = None
    return list(names)


@dataclass(frozen=True)
class Vocab:
    """Word forms of one language. Text is drawn from per-category pools (a category uses a
    quarter of the common words, so a word is not in every article) with names mixed in."""

    words: tuple[str, ...]  # common searchable words, most frequent first
    entities: tuple[str, ...]  # generated names, most popular first
    entity_weights: tuple[float, ...]  # cumulative
    glue: tuple[str, ...]  # CJK particles that follow a noun
    endings: tuple[str, ...]
    pools: dict[int, list[str]]  # category index -> a long weighted draw of word forms

    def entity_form(self, rng: random.Random, lang: str, name: str) -> str:
        if lang == "ko":
            return rng.choice(_korean_forms(name))
        return name + rng.choice(self.glue) if self.glue else name


def _forms(lang: str, nouns: list[str], weights: list[float]) -> tuple[list[str], list[float]]:
    if lang == "ko":
        per_noun = [_korean_forms(n) for n in nouns]
    elif lang in CJK:
        per_noun = [[n + g for g in CJK_GLUE[lang].split()] for n in nouns]
    else:  # half the words stand alone, half follow a function word ("of the", "de la")
        function = WORDS[lang].partition("|")[0].split()
        per_noun = [[n] * len(function) + [f"{f} {n}" for f in function] for n in nouns]
    forms = [f for fs in per_noun for f in fs]
    form_w = [w / len(fs) for w, fs in zip(weights, per_noun, strict=True) for _ in fs]
    return forms, form_w


def vocab_for(lang: str, pool_size: int = POOL_SIZE) -> Vocab:
    """Precomputes word forms and pools once, so text costs one slice per sentence (fast)."""
    nouns = (CJK_NOUNS[lang] if lang in CJK else WORDS[lang].partition("|")[2]).split()
    weights = _zipf(len(nouns))
    pools: dict[int, list[str]] = {}
    for c in range(len(CATEGORIES[lang])):
        # The 8 commonest words everywhere, plus a quarter of the rest per category.
        keep = [i for i in range(len(nouns)) if i < 8 or (i + c) % 4 == 0]
        forms, form_w = _forms(lang, [nouns[i] for i in keep], [weights[i] for i in keep])
        # Slicing one big seeded draw is ~10x faster than a weighted draw per word.
        pools[c] = random.Random(f"pool-{lang}-{c}").choices(
            forms, cum_weights=list(itertools.accumulate(form_w)), k=pool_size
        )
    entities = _names(lang)
    return Vocab(
        words=tuple(nouns),
        entities=tuple(entities),
        entity_weights=tuple(itertools.accumulate(_zipf(len(entities)))),
        glue=tuple(CJK_GLUE[lang].split()) if lang in CJK and lang != "ko" else (),
        endings=tuple(CJK_ENDINGS[lang].split()) if lang in CJK else (),
        pools=pools,
    )


@dataclass(frozen=True)
class Topic:
    pool: list[str]
    names: list[str]


def _sentence(rng: random.Random, lang: str, v: Vocab, topic: Topic, n: int) -> str:
    start = rng.randrange(len(topic.pool) - n)
    words = topic.pool[start : start + n]
    if rng.random() < 0.3:  # the article's subjects recur through its text
        words[rng.randrange(n)] = v.entity_form(rng, lang, rng.choice(topic.names))
    if lang in CJK:
        if lang == "ko":  # Korean separates words with spaces; Chinese and Japanese do not
            return " ".join(words) + " " + rng.choice(v.endings)
        if n > 6:
            words[n // 2] += "，" if lang.startswith("zh") else "、"
        return "".join(words) + rng.choice(v.endings)
    if n > 5:  # a comma mid-sentence, as real prose has
        words[n // 2] += ","
    text = " ".join(words)
    return text[0].upper() + text[1:] + "."


def _text(
    rng: random.Random, lang: str, v: Vocab, topic: Topic, chars: int, lo: int, hi: int
) -> str:
    parts: list[str] = []
    size = 0
    sep = " " if lang not in CJK or lang == "ko" else ""
    while size < chars:
        s = _sentence(rng, lang, v, topic, rng.randint(lo, hi))
        parts.append(s)
        size += len(s) + len(sep)
    return sep.join(parts)


def _title(rng: random.Random, lang: str, v: Vocab, topic: Topic) -> str:
    n = rng.randint(9, 12) if lang in CJK else rng.randint(5, 7)
    start = rng.randrange(len(topic.pool) - n)
    words = topic.pool[start : start + n]
    words[0] = v.entity_form(rng, lang, topic.names[0])  # headlines name their subject
    if rng.random() < 0.5:
        words[n // 2] = v.entity_form(rng, lang, topic.names[1])
    if lang in CJK and lang != "ko":
        return "".join(words)
    text = " ".join(words)
    return (text[0].upper() + text[1:])[: TITLE_CHARS + 20]


def _rfc3339(ts: datetime, offset_min: int) -> str:
    local = ts.astimezone(timezone(timedelta(minutes=offset_min)))
    return local.isoformat(timespec="seconds")


def article(
    rng: random.Random, lang: str, v: Vocab, n: int, article_id: str, categories: tuple[str, ...]
) -> dict[str, object]:
    published = YEAR_START + timedelta(seconds=rng.randrange(YEAR_SECONDS))
    offset = rng.choice(OFFSETS[lang])
    category = rng.choice(categories)
    names = rng.choices(v.entities, cum_weights=v.entity_weights, k=3)
    topic = Topic(v.pools[CATEGORIES[lang].index(category)], names)
    lo, hi = (6, 14) if lang in CJK else (5, 12)
    paragraphs = rng.randint(4, 6)
    body = "\n\n".join(
        _text(rng, lang, v, topic, BODY_CHARS // paragraphs, lo, hi) for _ in range(paragraphs)
    )
    tags = set(rng.sample(names, rng.randint(0, 2)))
    tags.update(rng.choices(v.words[:40], k=rng.randint(0, 3)))
    record: dict[str, object] = {
        "id": article_id,
        "language": lang,
        "title": _title(rng, lang, v, topic),
        "summary": _text(rng, lang, v, topic, SUMMARY_CHARS - 40, lo, hi),
        "content": body,
        "category": category,
        "tags": sorted(tags),
        "published_at": _rfc3339(published, offset),
    }
    if rng.random() < 0.8:
        record["author"] = rng.choice(AUTHORS[lang])
    if rng.random() < 0.7:
        record["image_url"] = f"https://img.example.com/{lang}/{n}.jpg"
    if rng.random() < 0.25:
        record["updated_at"] = _rfc3339(published + timedelta(minutes=rng.randint(5, 7200)), offset)
    return record


def ids_for(lang: str, per_language: int) -> list[str]:
    ids = [f"{lang}-{n}" for n in range(1, per_language + 1)]
    for k, pattern in enumerate(AWKWARD_IDS):
        pos = (k * 7919 + 13) % per_language  # spread through the corpus, fixed positions
        ids[pos] = pattern.format(lang=lang, n=pos + 1)
    return ids


def categories_for(lang: str, seed: int) -> tuple[str, ...]:
    rng = random.Random(f"categories-{seed}-{lang}")
    return tuple(rng.sample(CATEGORIES[lang], rng.randint(8, 12)))


# Share of article numbers that are a story told in several languages (docs/delivery.md,
# "Translations"): article n of each chosen language carries story_id "story-n".
STORY_SHARE = 0.3


def story_for(lang: str, n: int, seed: int) -> str | None:
    """The story of article number n in `lang`, from its own generator so that adding
    stories left every other field of the corpus as it was."""
    rng = random.Random(f"story-{seed}-{n}")
    if rng.random() >= STORY_SHARE:
        return None
    return f"story-{n}" if lang in rng.sample(LANGUAGES, rng.randint(2, len(LANGUAGES))) else None


def generate_language(lang: str, per_language: int, seed: int) -> Iterator[dict[str, object]]:
    rng = random.Random(f"corpus-{seed}-{lang}")  # str seeds are stable across processes
    v = vocab_for(lang)
    cats = categories_for(lang, seed)
    for n, article_id in enumerate(ids_for(lang, per_language), start=1):
        record = article(rng, lang, v, n, article_id, cats)
        story = story_for(lang, n, seed)
        if story is not None:
            record["story_id"] = story
        yield record


def _query_words(rng: random.Random, lang: str, title: str, v: Vocab) -> str:
    """One to three words of a real title, as a reader would type them: usually a name,
    sometimes with common words, sometimes common words alone."""
    names = [e for e in v.entities if e in title][:2]
    if lang in CJK:
        common = [w for w in v.words if w in title]
    else:
        tokens = {t.strip(".,").lower() for t in title.split()}
        common = sorted(tokens & {w.lower() for w in v.words})
    k = rng.randint(1, 3)
    picked = [rng.choice(names)] if names and rng.random() < 0.7 else []
    picked += rng.sample(common, min(len(common), k - len(picked)))
    if not picked:
        picked = names[:1] or [v.words[0]]
    return " ".join(w if lang in CJK else w.lower() for w in picked)


def url_lists(
    samples: dict[str, list[dict[str, object]]],
    cats: dict[str, tuple[str, ...]],
    seed: int,
    count: int,
) -> dict[str, list[str]]:
    """Per-endpoint URL lists of ``count`` paths, plus the mixed list in a fixed shuffled order."""
    rng = random.Random(f"urls-{seed}")
    vocabs = {lang: vocab_for(lang, 64) for lang in LANGUAGES}  # words and names only

    def list_url(lang: str) -> str:
        page = rng.randint(1, 5)
        if rng.random() < 0.3:
            return f"/api/v1/{lang}/articles?page={page}&category={quote(rng.choice(cats[lang]))}"
        return f"/api/v1/{lang}/articles?page={page}"

    def get_url(lang: str) -> str:
        doc = rng.choice(samples[lang])
        return f"/api/v1/{lang}/articles/{quote(str(doc['id']), safe='')}"

    def search_url(lang: str) -> str:
        title = str(rng.choice(samples[lang])["title"])
        q = _query_words(rng, lang, title, vocabs[lang])
        return f"/api/v1/{lang}/articles/search?q={quote(q, safe='')}"

    makers: dict[str, Callable[[str], str]] = {
        "list": list_url,
        "latest": lambda lang: f"/api/v1/{lang}/articles/latest",
        "get": get_url,
        "search": search_url,
        "categories": lambda lang: f"/api/v1/{lang}/categories",
    }
    lists = {
        name: [make(rng.choice(LANGUAGES)) for _ in range(count)] for name, make in makers.items()
    }
    # Every awkward id is fetched at least once so the harness checks its encoding end to end.
    awkward = [
        get_url_for(lang, str(d["id"]))
        for lang in LANGUAGES
        for d in samples[lang]
        if not str(d["id"]).removeprefix(f"{lang}-").isdigit()
    ]
    lists["get"][: len(awkward)] = awkward
    mix = [u for name, share in MIX.items() for u in lists[name][: MIX_URLS * share // 100]]
    rng.shuffle(mix)
    lists["mix"] = mix
    return lists


def get_url_for(lang: str, article_id: str) -> str:
    return f"/api/v1/{lang}/articles/{quote(article_id, safe='')}"


def _write_language(job: tuple[Path, str, int, int]) -> tuple[str, int, list[dict[str, object]]]:
    out, lang, per_language, seed = job
    keep: list[dict[str, object]] = []
    stride = max(1, per_language // 400)  # a sample spread over the whole language
    size = 0
    with (out / f"{lang}.jsonl").open("wb") as fh:
        for i, doc in enumerate(generate_language(lang, per_language, seed)):
            line = orjson.dumps(doc) + b"\n"
            size += len(line)
            fh.write(line)
            article_id = str(doc["id"])
            if i % stride == 0 or not article_id.removeprefix(f"{lang}-").isdigit():
                keep.append({"id": article_id, "title": doc["title"]})
    return lang, size, keep


def generate(out: Path, per_language: int, seed: int) -> dict[str, int]:
    out.mkdir(parents=True, exist_ok=True)
    jobs = [(out, lang, per_language, seed) for lang in LANGUAGES]
    # One process per core: each language is independent and seeded on its own.
    with multiprocessing.Pool(os.cpu_count() or 1) as pool:
        done = pool.map(_write_language, jobs, chunksize=1)
    samples = {lang: keep for lang, _, keep in done}
    cats = {lang: categories_for(lang, seed) for lang in LANGUAGES}
    (out / "urls").mkdir(exist_ok=True)
    for name, urls in url_lists(samples, cats, seed, ENDPOINT_URLS).items():
        (out / "urls" / f"{name}.txt").write_text("\n".join(urls) + "\n", encoding="utf-8")
    return {"articles": per_language * len(LANGUAGES), "bytes": sum(size for _, size, _ in done)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--per-language", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.per_language < 100:
        parser.error("--per-language must be at least 100 (the awkward ids need room)")
    started = time.perf_counter()
    stats = generate(args.out, args.per_language, args.seed)
    print(
        f"wrote {stats['articles']} articles, {stats['bytes'] / 1e6:.1f} MB, "
        f"in {time.perf_counter() - started:.1f} s to {args.out}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
