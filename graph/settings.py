"""Settings: the one place Lotsman reads the environment (pydantic-settings)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from stores.errors import UsageError

PROJECT_ROOT = Path(__file__).resolve().parent.parent

# Upper bounds: far above what a real deployment sets, low enough that a slip (an extra zero, `inf`, 10**12) is
# one line at start-up instead of a server that accepts it and fails later, or waits for ever.
MAX_LLM_SECONDS = 600.0
"""Any GigaChat timeout or deadline: ten minutes (answers take seconds; the defaults are 8 to 30 s)."""
MAX_LLM_RETRIES = 10
MAX_TOKEN_CAP = 131_072
"""The evidence budget: GigaChat's largest context window (128k tokens); the default is 4096 (seed 004), and
top_k ≤ 200 rows of ≤ ~1200 characters never fill it."""
MAX_EMBED_BATCH = 1024
MAX_PARSE_WORKERS = 64
MAX_DB_POOL_SIZE = 256
MAX_FILE_BYTES = 100_000_000
"""A file is read whole and parsed in memory; the default skips files over 1 MB."""
MAX_MILLISECONDS = 600_000
"""A lane's statement budget or the watch debounce: ten minutes (PostgreSQL's `statement_timeout` itself
stops at 2^31 − 1 ms: a bigger budget would fail every question)."""
MIN_AUTH_TOKEN_CHARS = 16
"""`LOTSMAN_AUTH_TOKEN` shorter than this is refused at start-up: a token is the only thing between the network and
every session (and indexing); 16 random characters are far beyond guessing through HTTP requests."""


class GigaChatSettings(BaseSettings):
    """GigaChat connection; unset credentials mean "run offline"."""

    model_config = SettingsConfigDict(env_prefix="GIGACHAT_", extra="ignore")

    credentials: SecretStr | None = None
    """Base64 authorization key (never logged)."""
    model: str | None = None
    """Chat model name; no default on purpose (SPEC §2.2)."""
    embeddings_model: str = "Embeddings"
    """`Embeddings` or `EmbeddingsGigaR`."""
    scope: str = "GIGACHAT_API_PERS"
    base_url: str | None = None
    auth_url: str | None = None
    verify_ssl_certs: bool = True
    timeout: float = Field(default=30.0, gt=0, le=MAX_LLM_SECONDS)
    """Seconds per request for answers."""
    router_timeout: float = Field(default=8.0, gt=0, le=MAX_LLM_SECONDS)
    """Seconds the router waits for the LLM before falling back."""
    request_deadline: float = Field(default=20.0, gt=0, le=MAX_LLM_SECONDS)
    """Seconds of LLM time one request may spend in total (router, rewrite, analysis, composition); once a
    call has timed out, the rest of the request runs offline at once."""
    max_retries: int = Field(default=1, ge=0, le=MAX_LLM_RETRIES)

    @property
    def enabled(self) -> bool:
        return self.credentials is not None and bool(self.credentials.get_secret_value())


class Settings(BaseSettings):
    """Process-wide settings (env vars with the `LOTSMAN_` prefix, plus a few standard names)."""

    model_config = SettingsConfigDict(env_prefix="LOTSMAN_", extra="ignore")

    database_url: str | None = Field(default=None, validation_alias="DATABASE_URL")
    """External Postgres with pgvector; unset → the embedded server under `data_dir`."""
    data_dir: Path = PROJECT_ROOT / ".data"
    """Dedicated folder for the embedded server (pgserver widens permissions on its parents)."""
    embedder: str = "use"
    """Default embedder: `use` (USE-multilingual, 512), `e5` (multilingual-e5-small, 384),
    `gigachat`, `fake` (tests)."""
    embed_batch_size: int = Field(default=32, ge=1, le=MAX_EMBED_BATCH)
    """Texts per embedding call while indexing."""
    parse_workers: int | None = Field(default=None, ge=0, le=MAX_PARSE_WORKERS)
    """Processes that parse files while indexing: unset → cores − 1 (1 to 4); 0 → on the indexing thread."""
    db_pool_size: int = Field(default=8, ge=1, le=MAX_DB_POOL_SIZE)
    """Connections in the process's one pool (every graph run, lane and index job of the process shares
    it); `lotsman serve` replicas each open up to this many, so size the database's `max_connections`
    at replicas × this + headroom."""
    max_file_bytes: int = Field(default=1_000_000, ge=1, le=MAX_FILE_BYTES)
    default_session: str = "default"
    token_cap: int = Field(default=4096, ge=1, le=MAX_TOKEN_CAP)
    """Token budget of the evidence handed to analysis and composition (`LOTSMAN_TOKEN_CAP`)."""
    top_k: int = Field(default=12, ge=1, le=200)
    """Evidence rows kept after fusion, before the token cap (the run context's limits)."""
    lane_budget_ms: int = Field(default=2000, ge=0, le=MAX_MILLISECONDS)
    """A retrieval lane's statement that runs longer is cancelled by PostgreSQL and the question is answered
    from the other lanes (0 → no budget). A safety net for pathological queries, far above normal lane
    times (milliseconds to tens of milliseconds, `make bench`)."""
    gigachat: GigaChatSettings = Field(default_factory=GigaChatSettings)
    llm_provider: Literal["gigachat", "openai"] = "gigachat"
    """The chat model's provider (`LOTSMAN_LLM_PROVIDER`): `gigachat` (the `GIGACHAT_*` settings) or `openai`, any
    OpenAI-compatible chat endpoint (vLLM, llama.cpp's server, Ollama, a gateway) at `OPENAI_BASE_URL` serving
    `LOTSMAN_LLM_MODEL`. Either way the `GIGACHAT_*` time limits (deadline, timeouts, retries) apply."""
    llm_model: str | None = None
    """The chat model name of the `openai` provider (`LOTSMAN_LLM_MODEL`; GigaChat's is `GIGACHAT_MODEL`)."""
    openai_base_url: str | None = Field(default=None, validation_alias="OPENAI_BASE_URL")
    """The OpenAI-compatible API's base URL, up to and including `/v1` (`http://127.0.0.1:8000/v1`)."""
    openai_api_key: SecretStr | None = Field(default=None, validation_alias="OPENAI_API_KEY")
    """Bearer key of the `openai` provider, when its server wants one (never logged)."""
    langsmith_tracing: bool = Field(default=False, validation_alias="LANGSMITH_TRACING")
    langsmith_api_key: SecretStr | None = Field(default=None, validation_alias="LANGSMITH_API_KEY")
    langsmith_project: str = Field(default="lotsman", validation_alias="LANGSMITH_PROJECT")
    auth_token: SecretStr | None = None
    """Bearer token the server requires for indexing over HTTP/MCP, and for every request when set
    (`LOTSMAN_AUTH_TOKEN`); unset → asking stays open and indexing is not offered to remote clients."""
    insecure_no_auth: bool = False
    """Leave a server other machines can reach open without `auth_token` (`LOTSMAN_INSECURE_NO_AUTH`, set by
    `lotsman serve --insecure-no-auth`); by default such a server answers requests from this machine only."""
    log_questions: bool = False
    """Record each question, its outcome and top files in `rag_question_log` (the input of `lotsman gaps`);
    off by default for the CLI (`LOTSMAN_LOG_QUESTIONS`)."""
    allowed_origins: str = "https://smith.langchain.com"
    """Comma-separated web origins (besides this machine's) whose pages may call a server listening on a
    loopback address (`LOTSMAN_ALLOWED_ORIGINS`; LangGraph Studio by default): any other site's page is
    refused, so that it cannot read the local index through the browser."""
    watch_debounce_ms: int = Field(default=800, ge=0, le=MAX_MILLISECONDS)
    """`lotsman watch`: milliseconds of quiet after a change before the incremental re-index starts."""

    @field_validator("llm_provider", mode="before")
    @classmethod
    def _provider_name(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("default_session")
    @classmethod
    def _names_a_session(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name a session")
        return value

    @property
    def pg_data_path(self) -> Path:
        return self.data_dir / "pg"


class SettingsError(UsageError):
    """An environment variable holds a value Lotsman cannot use; the message names the variable."""


def env_errors(exc: ValidationError, model: type[BaseSettings]) -> list[str]:
    """pydantic's report on `model` as `NAME: problem (got 'value')`, one item per bad variable.

    The variable is the field's alias (`LANGSMITH_TRACING`) or the model's prefix plus the field name; a
    secret's value is never repeated (none can fail today: any string is a valid secret).
    """
    prefix = model.model_config.get("env_prefix", "")
    fields = {}  # pydantic reports an aliased field under its alias
    for field_name, field in model.model_fields.items():
        alias = field.validation_alias if isinstance(field.validation_alias, str) else None
        fields[alias or field_name] = (alias or f"{prefix}{field_name}", "SecretStr" in str(field.annotation))
    parts = []
    for err in exc.errors(include_url=False):
        key = str(err["loc"][0]) if err["loc"] else ""
        name, secret = fields.get(key, (f"{prefix}{key}", True))
        got = f" (got {err['input']!r})" if err["type"] != "missing" and not secret else ""
        parts.append(f"{name.upper()}: {err['msg'].removeprefix('Value error, ')}{got}")
    return parts


def auth_token_problem(raw: str) -> str | None:
    """Why `LOTSMAN_AUTH_TOKEN` (set, surrounding whitespace already cut) cannot guard a server, or None.

    A blank token used to be taken as set, and no request could match it: everyone was locked out (or, where
    an empty string reads as "no token", the server was open while its operator thought it guarded). A header
    carries visible ASCII only (`Authorization: Bearer <token>`, `X-Api-Key`), so a token with a space, a
    control character or non-ASCII letters could never be sent either. The value is never repeated.
    """
    if not raw:
        return (f"is blank: set a token of at least {MIN_AUTH_TOKEN_CHARS} characters, or unset the variable to run "
                "without one")
    if not all("!" <= ch <= "~" for ch in raw):
        return ("holds a character a request header cannot carry (spaces, control characters and non-ASCII "
                "letters): use printable ASCII only")
    if len(raw) < MIN_AUTH_TOKEN_CHARS:
        return (f"is {len(raw)} characters long: use at least {MIN_AUTH_TOKEN_CHARS} "
                "(for example `python -c 'import secrets; print(secrets.token_urlsafe(24))'`)")
    return None


def llm_provider_problems(settings: Settings) -> list[str]:
    """What keeps the `openai` provider from being asked (nothing for `gigachat`, whose missing model is said
    when its credentials are set): its endpoint and model have no defaults, and a base URL is http(s)."""
    if settings.llm_provider != "openai":
        return []
    missing = [name for name, value in (("OPENAI_BASE_URL", settings.openai_base_url),
                                        ("LOTSMAN_LLM_MODEL", settings.llm_model)) if not (value or "").strip()]
    if missing:
        return [f"LOTSMAN_LLM_PROVIDER: openai needs {' and '.join(missing)} set"]
    url = (settings.openai_base_url or "").strip()
    if not url.startswith(("http://", "https://")):
        return [f"OPENAI_BASE_URL: must be an http:// or https:// URL such as http://127.0.0.1:8000/v1 (got {url!r})"]
    return []


def load_settings() -> Settings:
    """Settings from the environment, every unusable variable named in one `SettingsError`.

    GigaChat's settings are read first and on their own: read through `Settings`' default factory, their
    error would hide every other one. `LOTSMAN_AUTH_TOKEN` is checked here, at start-up (`auth_token_problem`),
    and kept without surrounding whitespace (a file's trailing newline); settings built in code are not.
    """
    problems: list[str] = []
    try:
        gigachat = GigaChatSettings()
    except ValidationError as exc:
        problems += env_errors(exc, GigaChatSettings)
        gigachat = GigaChatSettings.model_construct()
    try:
        settings = Settings(gigachat=gigachat)
    except ValidationError as exc:
        problems += env_errors(exc, Settings)
    else:
        if settings.auth_token is not None:
            raw = settings.auth_token.get_secret_value().strip()
            problem = auth_token_problem(raw)
            if problem is not None:
                problems.append(f"LOTSMAN_AUTH_TOKEN: {problem}")
            settings.auth_token = SecretStr(raw)
        problems += llm_provider_problems(settings)
    if problems:
        raise SettingsError(f"{'; '.join(problems)}: fix or unset the variable")
    return settings


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Settings read once per process (see `load_settings`); tests build `Settings(...)` directly instead."""
    return load_settings()
