"""Settings: the one place Lotsman reads the environment (pydantic-settings)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parent.parent


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
    timeout: float = 30.0
    """Seconds per request for answers."""
    router_timeout: float = 8.0
    """Seconds the router waits for the LLM before falling back."""
    request_deadline: float = 20.0
    """Seconds of LLM time one request may spend in total (router, rewrite, analysis, composition); once a
    call has timed out, the rest of the request runs offline at once."""
    max_retries: int = 1

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
    embed_batch_size: int = 32
    """Texts per embedding call while indexing."""
    parse_workers: int | None = None
    """Processes that parse files while indexing: unset → cores − 1 (1 to 4); 0 → on the indexing thread."""
    db_pool_size: int = 8
    """Connections in the process's one pool (every graph run, lane and index job of the process shares
    it); `lotsman serve` replicas each open up to this many, so size the database's `max_connections`
    at replicas × this + headroom."""
    max_file_bytes: int = 1_000_000
    default_session: str = "default"
    token_cap: int = 4096
    top_k: int = 12
    """Evidence rows kept after fusion, before the token cap."""
    lane_budget_ms: int = 2000
    """A retrieval lane's statement that runs longer is cancelled by PostgreSQL and the question is answered
    from the other lanes (0 → no budget). A safety net for pathological queries, far above normal lane
    times (milliseconds to tens of milliseconds, `make bench`)."""
    gigachat: GigaChatSettings = Field(default_factory=GigaChatSettings)
    langsmith_tracing: bool = Field(default=False, validation_alias="LANGSMITH_TRACING")
    langsmith_api_key: SecretStr | None = Field(default=None, validation_alias="LANGSMITH_API_KEY")
    langsmith_project: str = Field(default="lotsman", validation_alias="LANGSMITH_PROJECT")

    @property
    def pg_data_path(self) -> Path:
        return self.data_dir / "pg"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Settings read once per process; tests build `Settings(...)` directly instead."""
    return Settings()
