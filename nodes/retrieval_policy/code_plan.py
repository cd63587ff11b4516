"""Our addition to seed 000: a separate code plan when the request is about implementation."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from pydantic import BaseModel, ConfigDict, Field

from nodes.intent_routing.models import RouteResult
from nodes.retrieval_policy.policy import dedupe
from stores.layers import Layer

CODE_PLAN_LAYERS: tuple[Layer, ...] = (
    Layer.C3_ENTRYPOINTS,
    Layer.C1_SYMBOL_CATALOG,
    Layer.C2_DEPENDENCY_GRAPH,
    Layer.C0_SOURCE_CHUNKS,
)
CODE_PLAN_LIMIT = 8
MAX_CODE_TERMS = 8
# Bare words this short ("get", "app", "run") collide with ordinary words too often to mean code.
MIN_BARE_IDENTIFIER_LENGTH = 4


class CodePlan(BaseModel):
    """What to retrieve from the code layers; lives beside the docs `RetrievalPlan`, never inside it."""

    model_config = ConfigDict(frozen=True)

    layers: list[str] = Field(default_factory=lambda: [layer.value for layer in CODE_PLAN_LAYERS])
    """Code layers in priority order: entrypoints, symbols, dependencies, source chunks."""
    limit: int = CODE_PLAN_LIMIT
    """How many code rows the code lane returns."""
    terms: list[str]
    """Lower-cased identifiers and file names to look up lexically."""
    reason: str
    """Which triggers fired, e.g. `symbols: apirouter; words: реализован`."""
    identifiers: list[str] = Field(default_factory=list)
    """Catalogued symbols named in the request: strong evidence the answer is in the code."""
    explicit: bool = False
    """The request asks for the code itself (`.py` names, "в коде", "исходник", "implemented"); words like
    "класс" or "функция" trigger the plan without this."""


_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_INNER_CAPITAL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2,}[a-z]")
_SNAKE = re.compile(r"[A-Za-z0-9]_[A-Za-z0-9]|^_+[A-Za-z]")
_PY_FILE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]*\w\.py)\b", re.IGNORECASE)
_LATIN_NAME = re.compile(r"^[a-z_][a-z0-9_.]*$")

# Russian noun endings, so a stem matches its inflections but not longer words ("кодировка").
_HARD = r"(?:а|у|ом|е|ы|ов|ам|ами|ах)?"
_VELAR = r"(?:а|у|ом|е|и|ов|ам|ами|ах)?"
_IMPLEMENTATION_WORDS = re.compile(
    rf"\b(?:код{_HARD}|исходник{_VELAR}|реализаци\w*|реализован\w*|реализу(?:ет|ется|ют|ются)"
    rf"|функци(?:я|и|ю|ей|й|ям|ями|ях)|класс{_HARD}|метод{_HARD}|сигнатур\w*"
    rf"|модул(?:ь|я|е|ем|и|ей|ям|ях)|констант\w*|конструктор{_HARD}"
    r"|implement(?:s|ed|ations?)|source[\s-]code|source\s+files?|in\s+the\s+(?:code|source)|codebase"
    r"|functions?|class(?:es)?|methods?|signatures?|modules?|constants?|constructors?)\b"
)
# Phrases with a trigger word that ask about documented behaviour, not about implementation.
_NOT_IMPLEMENTATION = re.compile(
    rf"\bкод{_HARD}\s+(?:ответ|состояни|статус|ошиб|возврат|http)\w*"
    r"|\b(?:статус|http)[\s-]код\w*"
    rf"|\b(?:пример\w*|фрагмент\w*)\s+код{_HARD}\b"
    rf"|\bhttp[\s-]метод\w*|\bметод{_HARD}\s+(?:http|запрос)\w*"
    r"|\bstatus\s+codes?\b|\bhttp\s+methods?\b"
)


# Words that ask for the code itself, not for how to use a feature ("класс как зависимость" is a docs
# question; "в исходниках", "реализован", "implemented", "source" are not).
_EXPLICIT_WORDS = re.compile(r"исходник|реализ|\bкод[еа]?\b|implement|source|codebase")


# Questions about the program's entrypoints (seed 003 §5.2's C3 attributes): which routes need auth, what runs
# on a schedule. The entrypoint rows answer them; a route noun alone ("маршрут", "endpoint") does not, nor
# "Celery" or "task queue" (docs questions about an integration or a concept, on the dev splits).
_ENTRY_NOUN = (r"(?:маршрут\w*|роут(?:ы|а|ов|ам|ах|е|ом)?|эндпоинт\w*|эндпойнт\w*|ручк\w*|обработчик\w*"
               r"|routes?|endpoints?|handlers?)")
_AUTH_WORD = r"(?:авториз|аутентиф|auth|login|логин|protected|защищ|secur|токен|token)\w*"
_ENTRYPOINT_WORDS = re.compile(
    rf"\b{_ENTRY_NOUN}\b.*?\b{_AUTH_WORD}|\b{_AUTH_WORD}.*?\b{_ENTRY_NOUN}\b"
    r"|\bпо\s+расписанию\b|\bрасписани\w*|\bкрон\w*|\bcron\w*|\bon\s+a\s+schedule\b|\bscheduled\b"
    r"|\bperiodic(?:ally)?\b|\bпериодическ\w*",
    re.IGNORECASE,
)


# "What runs on a schedule / in the background in this project?": an inventory of the program's jobs, which
# the C3 rows list (a Celery `shared_task`, an APScheduler or cron job). Background words alone are not one:
# "a background task" is a documented feature too ("can a background task use a yield dependency?").
_BACKGROUND = re.compile(
    r"\bbackground\s+(?:tasks?|jobs?|workers?|processing)\b|\bin\s+the\s+background\b"
    r"|\bфонов\w*(?:\s+(?:задач\w*|работ\w*|процесс\w*|джоб\w*))?|\bв\s+фоне\b",
    re.IGNORECASE,
)
_SCHEDULE = re.compile(
    r"\bпо\s+расписанию\b|\bрасписани\w*|\bкрон\w*|\bcron\w*|\bon\s+a\s+schedule\b|\bscheduled\b"
    r"|\bperiodic(?:ally)?\b|\bпериодическ\w*",
    re.IGNORECASE,
)
# "what runs", «что запускается», "which jobs does this project run", «какие задачи есть в проекте»: the question
# asks for the list, not a detail of one job ("Во сколько запускается бэкап по расписанию?" is answered by the
# docs that document it): it asks what or which, runs something or says whose (this project), and names no API.
_WHAT_OR_WHICH = re.compile(r"\b(?:what|which)\b|\bчто\b|\bкак(?:ие|ая|ой)\b", re.IGNORECASE)
_RUN_VERB = re.compile(
    r"\b(?:runs?|execute[sd]?|starts?|started|fires?)\b|\bзапуска\w*|\bвыполня\w*|\bкрутит\w*|\bработает\b",
    re.IGNORECASE,
)
_OF_THE_PROJECT = re.compile(
    r"\b(?:this|the|our|my)\s+(?:project|app|application|service|codebase|repo(?:sitory)?)\b"
    r"|\bв\s+(?:этом\s+|нашем\s+|моём\s+|моем\s+)?(?:проекте|приложении|сервисе|репозитории|коде)\b",
    re.IGNORECASE,
)
_NAMED_API = re.compile(r"\w_\w|\w\(|[a-z][A-Z]")
"""`add_task`, `run()`, `BackgroundTasks`: a question naming an API asks about that API, its docs answer it."""


def job_inventory_question(query: str) -> bool:
    """Whether the request asks what the program runs on a schedule or in the background (its C3 job rows
    answer it, the best one first)."""
    return bool(_WHAT_OR_WHICH.search(query) and (_SCHEDULE.search(query) or _BACKGROUND.search(query))
                and (_RUN_VERB.search(query) or _OF_THE_PROJECT.search(query)) and not _NAMED_API.search(query))


# "Which endpoint takes HeroCreate?", «какой эндпоинт возвращает HeroRead?»: the route's row (its request and
# response models) answers, not the model's own definition, which wins any look-up by name.
_ENTRY_MODEL_QUESTION = re.compile(
    rf"\b{_ENTRY_NOUN}\b.*?\b(?:takes?|accepts?|returns?|receives?|expects?|принима\w*|возвраща\w*|получа\w*"
    r"|отда[её]т\w*)\b",
    re.IGNORECASE,
)
ENTRY_ONLY_LAYERS: tuple[Layer, ...] = (Layer.C3_ENTRYPOINTS,)


def entry_model_question(query: str) -> bool:
    """Whether the request asks which route takes or returns something (answered by C3 rows alone)."""
    return bool(_ENTRY_MODEL_QUESTION.search(query))


def entrypoint_words(query: str) -> list[str]:
    """Phrases asking about entrypoints' auth, schedules or background jobs ("routes need auth", «по
    расписанию», "what runs as a background task"), lower-cased."""
    words = [match.group(0).lower() for match in _ENTRYPOINT_WORDS.finditer(query)]
    if job_inventory_question(query):
        words += [match.group(0).lower() for match in _BACKGROUND.finditer(query)]
    return dedupe(words)


def implementation_words(query: str) -> list[str]:
    """Words that ask about implementation ("в коде", "реализован", "signature"), lower-cased."""
    text = _NOT_IMPLEMENTATION.sub(" ", query.lower())
    return dedupe(match.group(0) for match in _IMPLEMENTATION_WORDS.finditer(text))


def python_file_names(query: str) -> list[str]:
    """`.py` file names or paths mentioned in the query, lower-cased."""
    return dedupe(match.group(1).lower() for match in _PY_FILE.finditer(query))


def _looks_like_code(token: str, *, called: bool, sentence_start: bool) -> bool:
    if called or "." in token or _SNAKE.search(token) or _INNER_CAPITAL.search(token):
        return True
    # "Depends" mid-sentence is a name; "Request bodies ..." at a sentence start is just a word.
    return token[0].isupper() and not sentence_start


def query_identifiers(query: str) -> list[str]:
    """Raw tokens that look like code: snake_case, CamelCase, dotted.names, call() (kept with `()`)."""
    found = []
    for match in _TOKEN.finditer(query):
        token = match.group(0)
        called = query[match.end() : match.end() + 1] == "("
        before = query[: match.start()].rstrip()
        sentence_start = not before or before[-1] in ".!?:"
        if _looks_like_code(token, called=called, sentence_start=sentence_start):
            found.append(f"{token}()" if called else token)
    return found


def _clean_name(candidate: str) -> str:
    return candidate.strip().strip("`'\"").removesuffix("()").lower()


def _too_short(key: str) -> bool:
    # Bare words like "get", "app", "run" are catalogued symbols and ordinary words alike.
    return "." not in key and "_" not in key and len(key) < MIN_BARE_IDENTIFIER_LENGTH


def _lookup_keys(candidate: str) -> list[str]:
    """The whole name first, then its dotted parts from the last (`app.include_router`)."""
    name = _clean_name(candidate)
    parts = [part for part in name.split(".") if part]
    keys = dedupe([name, *reversed(parts)])
    called = candidate.strip().endswith("()")
    return [key for key in keys if (called and key == name) or not _too_short(key)]


def is_package_root(name: str, symbols: Collection[str]) -> bool:
    """True for a top-level package name (`fastapi` when `fastapi.routing...` is catalogued).

    Such a name shows up in nearly every question about the project, so alone it says nothing
    about implementation.
    """
    prefix = f"{name}."
    return any(symbol.startswith(prefix) for symbol in symbols)


def symbol_hits(candidates: Iterable[str], symbols: Collection[str]) -> tuple[list[str], list[str]]:
    """Catalogued names among the candidates, split into (telling identifiers, package roots)."""
    found = dedupe(key for candidate in candidates for key in _lookup_keys(candidate) if key in symbols)
    roots = [name for name in found if is_package_root(name, symbols)]
    return [name for name in found if name not in roots], roots


def identifier_candidates(route: RouteResult) -> list[str]:
    """Code-looking query tokens, then the router's entity names and code-shaped target terms.

    Plain lower-case words among the target terms ("request", "responses", "serialize") are left out:
    they are module or method names and ordinary English alike, and would pull code into docs questions.
    """
    query = route.normalized_query or route.user_query
    code_shaped = [t for t in route.target_terms if _SNAKE.search(t) or "." in t or t.endswith("()")]
    return [*query_identifiers(query), *route.anchors.entity_names, *code_shaped]


def _lexical_terms(candidates: Iterable[str], roots: list[str]) -> list[str]:
    """Latin-script candidates worth a lexical look-up even when the catalogue lacks them."""
    names = (_clean_name(candidate) for candidate in candidates)
    return [name for name in names if _LATIN_NAME.match(name) and not _too_short(name) and name not in roots]


def _reason(identifiers: list[str], files: list[str], words: list[str]) -> str:
    parts = {"symbols": identifiers, "files": files, "words": words}
    return "; ".join(f"{label}: {', '.join(values)}" for label, values in parts.items() if values)


def resolve_code_plan(route: RouteResult, symbols: Collection[str]) -> CodePlan | None:
    """Builds the code plan when the request is about implementation.

    Args:
        route: The router's result (the docs plan is resolved separately and never changes).
        symbols: Lower-cased names of the session's symbol catalog, short and qualified.

    Returns:
        A `CodePlan` when a catalogued identifier, a `.py` name, an implementation word or an entrypoint
        question (auth of routes, schedules) occurs in the request; `None` otherwise. A relation question's
        own nouns ("which modules") do not count; a question which route takes or returns a catalogued
        name, or about routes' auth or schedules, searches the entrypoints alone. A top-level package
        name (`fastapi`) alone is not enough.
    """
    query = route.normalized_query or route.user_query
    candidates = identifier_candidates(route)
    identifiers, roots = symbol_hits(candidates, symbols)
    # `FastAPI()` written as a call is the class, not the package name that every question mentions.
    called = {_clean_name(c) for c in query_identifiers(query) if c.endswith("()")}
    identifiers += [root for root in roots if root in called]
    roots = [root for root in roots if root not in called]
    files = python_file_names(query)
    words = [*implementation_words(query), *entrypoint_words(query)]
    if route.anchors.relation_predicates:
        # "which modules write to X": the nouns name who acts, the relation edges answer (not the code)
        words = entrypoint_words(query)
    if not (identifiers or files or words):
        return None
    entry_only = (identifiers and entry_model_question(query)) or entrypoint_words(query)
    layers = ENTRY_ONLY_LAYERS if entry_only else CODE_PLAN_LAYERS
    # Package roots go last: as lexical terms they match nearly every file.
    terms = dedupe([*identifiers, *files, *_lexical_terms(candidates, roots), *roots])
    return CodePlan(layers=[layer.value for layer in layers],
                    terms=terms[:MAX_CODE_TERMS], reason=_reason(identifiers, files, words),
                    identifiers=identifiers[:MAX_CODE_TERMS],
                    # a job inventory is answered by the entrypoint rows themselves: the best one leads
                    # (`merge.code_slot`) instead of depending on which prose the learned order puts first
                    explicit=bool(files or any(_EXPLICIT_WORDS.search(w) for w in words)
                                  or job_inventory_question(query)))
