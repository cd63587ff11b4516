"""Russian and English word lists of the router: question, intent, filler and marker words (seed 002 §5)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class WordSet:
    """Words matched exactly plus stems matched as prefixes.

    Russian inflects («архитектура», «архитектуре», «архитектурой»), so content words are listed by stem;
    short function words stay exact, because as prefixes they would swallow real terms («про» → «проект»).
    """

    exact: frozenset[str]
    stems: tuple[str, ...] = ()

    def __contains__(self, word: object) -> bool:
        if not isinstance(word, str):
            return False
        return word in self.exact or (bool(self.stems) and word.startswith(self.stems))

    def first_hits(self, words: list[str]) -> tuple[str, ...]:
        """Words of `words` in this set, in order, without repeats."""
        return tuple(dict.fromkeys(w for w in words if w in self))


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _stems(text: str) -> tuple[str, ...]:
    return tuple(text.split())


QUESTION_WORDS = WordSet(
    _words(
        "что чем чего чему кто кого кому как где когда почему зачем куда откуда сколько ли разве неужели "
        "какой какая какое какие каких каком какую каким какими какого какому каков какова каково "
        "который которая которое которые которых котором которой которую "
        "what whats how hows where wheres when why which who whom whose "
        "is are was were do does did can could should would will shall may might must"
    )
)

INTENT_WORDS = WordSet(
    _words(
        "ищу искать ищет значит означает делает делать сделать помоги помогите помочь хочу хотел хотела "
        "понять узнать знать настроить настраивать настраивается настроен настроена настроено дай дайте "
        "использовать используется используют использует работает работают работать работа выглядит "
        "лежит лежат написано написан написана "
        "explain explains describe describes summarize summarise show find list tell give locate "
        "work works working worked mean means use uses using used need needs want help understand know "
        "set setup configure configured make create add happen happens behave behaves mention mentions "
        "mentioned define defines defined documented described explained covered declared located registered"
    ),
    stems=_stems(
        "описан объясн расскаж рассказ опиш описыв покаж показ найд найт подскаж перечисл суммир резюм "
        "разбер устро нужн"
    ),
)

FILLER_WORDS = WordSet(
    _words(
        "пожалуйста плиз мне меня мной нам нас я мы ты вы вам вас тебе это этот эта эти этой этом этого "
        "этих тот та те то там тут здесь в во на с со о об обо про по для из к ко у от до за и а но или "
        "либо не ни же бы ведь так также тоже такое такой такая такие вообще просто вот ещё еще уже "
        "очень всё все весь вся всего всех его ее её их им ему он она оно они ну давай давайте привет "
        "приветствую здравствуй здравствуйте спасибо добрый день вечер утро надо можно есть быть был "
        "была были будет мой моя моё мое мои свой свою своих чтобы если между при без над под после "
        "перед через только именно кратко подробно подробнее коротко вкратце сейчас теперь потом тогда "
        "всегда иногда вопрос кстати например типа вроде лучше хорошо много мало сам сама само самый "
        "нибудь том тем той "
        "the a an of in on at to for from with without by about into onto over under between and or but "
        "not no yes it its this that these those there here me my mine we us our you your i im he she "
        "they them their please pls hi hello hey thanks thank some any all just really so then than "
        "also too very more most much many if else up out let lets like kind sort thing things "
        "something anything way ways one ones own be been being have has had having get gets got "
        "again briefly short ok okay etc via vs"
    )
)

COMMON_WORDS = _words(
    # Generic words that never count as a project alias even when an index lists them.
    "python питон питона code код кода file файл files файлы doc docs documentation документация "
    "документ project проект data данные app application приложение api example examples пример "
    "примеры function функция class класс method метод type тип types типы value значение new old "
    "main index intro введение guide руководство tutorial учебник about general общее help помощь "
    "resources ресурсы learn обучение features возможности test тест user пользователь "
    "index.md readme.md __init__.py"
)

ARCHITECTURE_MARKERS = WordSet(
    _words("design designed layer layers diagram diagrams structure structured internals"),
    stems=_stems(
        "архитектур компонент модул структур слой слоя слое слоё слои диаграмм взаимодейств проектирован "
        "architect component module"
    ),
)

LOGIC_MARKERS = WordSet(
    _words("logic flow workflow pipeline sequence lifecycle step steps behaviour behavior internally"),
    stems=_stems(
        "логик алгоритм механизм жизненн последовательн пайплайн флоу сценари этап шаг algorithm mechanism"
    ),
)

DOMAIN_MARKERS = WordSet(
    _words(
        "доки доке доку коде кодом doc docs documentation readme project repo repository codebase "
        "source tutorial guide manual spec specification config configuration settings"
    ),
    stems=_stems("документац проект репозитор исходн руководств туториал учебник спецификац конфиг настройк"),
)

ENDPOINT_MARKERS = WordSet(
    _words("url uri urls endpoint endpoints route routes webhook webhooks"),
    stems=_stems("эндпоинт эндпойнт ендпоинт ручк роут маршрут вебхук урл"),
)

FILE_MARKER_WORDS = WordSet(
    _words(
        "file files doc docs document documents page pages section sections path paths folder folders "
        "directory link links путь пути"
    ),
    stems=_stems("файл страниц раздел папк ссылк документ"),
)

HTTP_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})

# File markers are phrases, not single words: «документация по CORS» asks for an explanation, while
# «в каком файле», «где описано», «which file», «find the docs about» ask where things are.
_RU_WHERE_VERBS = (
    r"описан|опис|изложен|расписан|рассказ|говорит|сказан|написан|упомина|документир|определ|объявл"
    r"|реализ|лежит|лежат|располож|находит|найти|посмотреть|почитать|прочитать|прочесть|искать|использ"
    r"|задан|задаёт|задает"
)
_RU_WHERE_PLACES = r"документац|доке|доках|коде|исходник|репозитор|проекте|файл"
_RU_FILE_NOUNS = r"файл|документ|раздел|страниц|модул|стать|глав|исходник"
_RU_FIND_VERBS = r"найди|найдите|найти|ищу|покажи|покажите|показать|перечисли|перечислите|выведи|дай|дайте"
_RU_FIND_VERBS += r"|подскажи|подскажите|скинь|нужны|нужен|нужна"
_EN_FILE_NOUNS = r"files?|docs?|documents?|pages?|modules?|sections?|chapters?"
FILE_MARKER_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        rf"\bгде\b.*\b(?:{_RU_WHERE_VERBS})\w*",
        rf"\bгде\s+(?:в|во)\s+(?:{_RU_WHERE_PLACES})\w*",
        rf"\bв\s+как(?:ом|ой|их)\s+(?:\w+\s+)?(?:{_RU_FILE_NOUNS}|месте|част)\w*",
        rf"\bкак(?:ой|ие|ая|их|ую)\s+(?:\w+\s+)?(?:{_RU_FILE_NOUNS})\w*",
        rf"\b(?:{_RU_FIND_VERBS})\b.*\b(?:{_RU_FILE_NOUNS}|ссылк|пут[иь])\w*",
        r"\b(?:найди|найдите|найти|ищу)\b.*\b(?:пример|упоминан|мест)\w*",
        r"\b(?:путь|пути)\s+(?:к|до)\s+\w+",
        r"\bсписок\s+(?:файлов|документов|страниц|разделов)\b",
        r"^(?:файлы?|документы?|страницы?|разделы?)\s+(?:про|о|об|по|с|со|для|где)\b",
        r"\bwhere\b.*\b(?:documented|described|explained|covered|mentioned|defined|declared|implemented"
        r"|located|configured|registered|used|find|read|look)\b",
        r"\bwhere\s+in\s+(?:the\s+)?(?:docs|documentation|code|codebase|source|repo|repository|project)\b",
        rf"\b(?:which|what)\s+(?:\w+\s+)?(?:{_EN_FILE_NOUNS})\b",
        rf"\b(?:find|show|list|locate|give|point|send|link)\b.*\b(?:{_EN_FILE_NOUNS}|paths?|links?)\b",
        r"\bfind\b.*\b(?:examples?|usages?|mentions?|places?)\b",
        rf"^(?:the\s+)?(?:{_EN_FILE_NOUNS})\s+(?:about|on|for|covering|describing|mentioning|that|with)\b",
        r"\bpath\s+to\s+(?:the\s+)?(?:file|doc)",
    )
)

STOP_WORDS = (QUESTION_WORDS, INTENT_WORDS, FILLER_WORDS)
MARKER_WORD_SETS = (ARCHITECTURE_MARKERS, LOGIC_MARKERS, DOMAIN_MARKERS, ENDPOINT_MARKERS, FILE_MARKER_WORDS)

# Relation questions (seed 003 §5.1's relation fields): "who calls / uses / reads / writes / emits / consumes X".
# The subject is who acts: «кто», "what", or "which/какие" + a word for a part of a system («какие модули
# пишут», "which services read"), then the verb. «Какой статус-код использует RedirectResponse» asks for a
# property, not a relation. Each verb names the seed's field pair it asks about; both ends answer.
_AGENTS = (r"модул|сервис|компонент|систем|приложени|част|код|функци|класс|обработчик|задач|процесс|воркер"
           r"|modules?|services?|components?|systems?|apps?|applications?|parts?|code|functions?|class(?:es)?"
           r"|handlers?|consumers?|producers?|subscribers?|jobs?|tasks?|workers?|processes")
_RELATION_SUBJECT = (rf"(?:\b(?:кто|who|что|what)|\b(?:как(?:ие|ой|ая|ое|их)|which|what)\s+(?:\w+\s+)?(?:{_AGENTS})\w*)"
                     r"\s+(?:ещё\s+|еще\s+|else\s+)?")
RELATION_VERBS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(_RELATION_SUBJECT + rf"(?:{verbs})\b", re.IGNORECASE), predicates)
    for verbs, predicates in (
        (r"вызыва\w*|дёрга\w*|дерга\w*|calls?|invokes?", ("calls_api", "called_by")),
        (r"использу\w*|uses|depends\s+on|завис(?:ит|ят)\s+от", ("uses_logic", "used_by")),
        (r"чита(?:ет|ют)|reads?|queries", ("reads_db",)),
        (r"пиш(?:ет|ут)|записыва(?:ет|ют)|writes?(?:\s+to|\s+into)?|inserts?\s+into", ("writes_db",)),
        (r"интегрир\w*|integrates?", ("integrates_with",)),
        (r"публику(?:ет|ют)|отправля(?:ет|ют)|генериру(?:ет|ют)|emits?|publish(?:es)?|fires?", ("emits_events",)),
        (r"потребля(?:ет|ют)|слуша(?:ет|ют)|подписан\w*|обрабатыва(?:ет|ют)\s+событи\w*|consumes?|subscribes?"
         r"|listens?", ("consumes_events",)),
    )
)

# Rule questions (seed 003's policy index): "what are the rules for X", «какие правила / соглашения», «нельзя ли»,
# «обязательно ли», "must I". Not a bare «нельзя» (a fact of the text: «имя, которое нельзя записать») nor
# "policy" (names components: "retrieval policy").
POLICY_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bправил(?:о|а|ам|ах|ами)?\b",
        r"\b(?:конвенци|соглашени|регламент)\w*",
        r"\bнельзя\s+ли\b|\bобязательно\s+ли\b|\bобязан\w*\s+ли\b",
        r"\b(?:rules?|conventions?|guidelines?)\b",
        r"\bmust\s+(?:i|we|you|it|they)\b|\b(?:is|are)\s+(?:it\s+)?(?:allowed|forbidden|required)\b",
    )
)
