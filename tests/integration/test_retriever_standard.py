"""`LotsmanRetriever` against langchain-tests' standard `RetrieversIntegrationTests` (embedded Postgres).

A small real corpus (markdown + Python) is indexed once per module with the fake embedder into its own
session; the standard suite reads the constructor parameters from class attributes that a module-scoped
autouse fixture sets (the suite accesses `retriever_constructor_params` as a property, not a fixture).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests

from nodes.context_retrieval.adapter import RetrievalAdapter
from nodes.context_retrieval.retriever import LotsmanRetriever
from stores.embedders import FakeEmbeddings
from stores.indexing.service import index_repository
from stores.repository import RagRepository
from stores.sessions import get_session

SESSION = f"it-retriever-standard-{uuid.uuid4().hex[:8]}"

CORPUS: dict[str, str] = {
    "docs/payments.md": """# Платежи

Сервис платежей принимает оплату картой и возвращает квитанцию.

## Возврат платежа

Возврат платежа выполняется через `POST /refunds` в течение 30 дней после оплаты.

## Лимиты

Один платёж не может превышать 100 000 рублей; лимит проверяет `PaymentLimiter`.
""",
    "docs/orders.md": """# Заказы

Заказ создаётся корзиной и оплачивается через сервис платежей.

## Статусы заказа

1. Создан
2. Оплачен
3. Отправлен

## Отмена заказа

Отменить можно только неоплаченный заказ.
""",
    "docs/deployment.md": """# Deployment

The service runs in Docker; configuration comes from environment variables.

## Scaling

Run several workers behind a load balancer to handle more payment requests.
""",
    "src/payments/limiter.py": '''"""Payment limits."""


class PaymentLimiter:
    """Checks that a payment stays under the limit."""

    def __init__(self, limit: int = 100_000) -> None:
        self.limit = limit

    def check(self, amount: int) -> bool:
        """True when the payment amount is allowed."""
        return 0 < amount <= self.limit


def refund(payment_id: str) -> dict:
    """Refund a payment by id."""
    return {"payment_id": payment_id, "status": "refunded"}
''',
    "src/orders/service.py": '''"""Order service."""

from src.payments.limiter import PaymentLimiter


def create_order(items: list[str]) -> dict:
    """Create an order from cart items."""
    return {"items": items, "status": "created"}


def cancel_order(order: dict) -> dict:
    """Cancel an unpaid order."""
    if order.get("status") == "paid":
        raise ValueError("paid orders cannot be cancelled")
    return {**order, "status": "cancelled"}
''',
}


@pytest.fixture(scope="module", autouse=True)
def _indexed_corpus(db, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Index the corpus once and hand the session and adapter to the standard suite's class."""
    root: Path = tmp_path_factory.mktemp("retriever-standard")
    for rel, text in CORPUS.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    embedder = FakeEmbeddings()
    report = index_repository(db, root, session_name=SESSION, embedder=embedder)
    assert report.rows_written > 0
    with db.connection() as conn:
        session = get_session(conn, SESSION)
    TestLotsmanRetrieverStandard.adapter = RetrievalAdapter(RagRepository(db), embedder)
    TestLotsmanRetrieverStandard.session = session


class TestLotsmanRetrieverStandard(RetrieversIntegrationTests):
    adapter: Any = None
    session: Any = None

    @property
    def retriever_constructor(self) -> type[LotsmanRetriever]:
        return LotsmanRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        assert self.adapter is not None and self.session is not None, "module fixture did not run"
        return {"adapter": self.adapter, "session": self.session, "k": 4}

    @property
    def retriever_query_example(self) -> str:
        return "Как выполняется возврат платежа?"


# Beyond the standard suite: what our Documents carry.


def _retriever(k: int = 4) -> LotsmanRetriever:
    cls = TestLotsmanRetrieverStandard
    return LotsmanRetriever(adapter=cls.adapter, session=cls.session, k=k)


def test_documents_carry_path_lines_layer_and_provenance() -> None:
    docs = _retriever(k=5).invoke("Как выполняется возврат платежа?")
    assert docs
    assert all(isinstance(d, Document) for d in docs)
    for d in docs:
        meta = d.metadata
        assert meta["path"] in CORPUS
        assert 1 <= meta["start_line"] <= meta["end_line"]
        assert meta["citation"] == f"{meta['path']}:{meta['start_line']}-{meta['end_line']}"
        assert meta["layer"]
        assert meta["lanes"] and all(isinstance(r, int) and r >= 1 for r in meta["lanes"].values())
        assert meta["fused_score"] > 0
        assert d.id
    assert "docs/payments.md" in [d.metadata["path"] for d in docs]


async def test_ainvoke_matches_invoke() -> None:
    retriever = _retriever(k=3)
    query = "PaymentLimiter limit check"
    sync_docs = retriever.invoke(query)
    async_docs = await retriever.ainvoke(query)
    assert [d.id for d in sync_docs] == [d.id for d in async_docs]
    assert len(sync_docs) == 3


def test_batch_of_queries() -> None:
    out = _retriever(k=2).batch(["возврат платежа", "отмена заказа", "scaling workers"])
    assert [len(docs) for docs in out] == [2, 2, 2]
