"""Topic thresholds of `lotsman gaps` (graph.cli_feedback.TOPIC_THRESHOLDS), measured with the real offline
embedders on two labelled sets of gap questions: pairwise precision and recall of "same topic"."""

from __future__ import annotations

import itertools

import pytest

from graph.cli_feedback import TOPIC_THRESHOLDS, embed_for_topics
from stores.embedders import make_embedder
from stores.question_log import cluster_by_similarity

MIXED = {  # Russian and English, one product's docs questions
    "kafka": ["Как настроить Kafka?", "Где описана интеграция с Kafka?", "How do I connect Kafka consumers?",
              "Поддерживается ли Kafka как брокер?"],
    "backup": ["Как сделать резервную копию базы?", "How do I back up the database?",
               "Где описано восстановление из бэкапа?"],
    "auth": ["Как включить OAuth2 авторизацию?", "How does authentication with OAuth2 work?",
             "Где настраиваются токены доступа?"],
    "deploy": ["Как развернуть сервис в Kubernetes?", "How to deploy on Kubernetes with Helm?",
               "Есть ли Helm-чарт для деплоя?"],
    "index": ["Как переиндексировать репозиторий?", "How do I rebuild the index?",
              "Что делает lotsman index --rebuild?"],
    "pricing": ["Сколько стоит лицензия?", "What is the price of an enterprise license?"],
}
HARBOR = {  # what tests/integration/test_coverage_gaps.py's small repository refuses or answers weakly (the
    # product's name in most questions)
    "kafka": ["How do I connect Harbor to Kafka?", "Does Harbor publish arrivals to Kafka topics?",
              "Kafka consumer configuration for Harbor"],
    "k8s": ["How do I deploy Harbor on Kubernetes?", "Is there a Kubernetes Helm chart for Harbor?",
            "Kubernetes liveness probe for Harbor"],
    "saml": ["How do I enable SAML single sign-on?", "Does Harbor support SAML login?"],
    "terraform": ["How do I provision Harbor with Terraform?"],
    "tides": ["When may deep-draught ships enter the port?",
              "What happens to a ship whose draught exceeds the channel depth?"],
    "berth": ["Как назначается причал судну?"],
    "backup": ["Как сделать резервную копию Harbor?"],
    "env": ["Which environment variable sets the database URL?"],
}


def pairwise(labels: list[str], clusters: list[list[int]]) -> tuple[float, float]:
    """Precision and recall of "these two are one topic" over all pairs."""
    group = {i: k for k, members in enumerate(clusters) for i in members}
    tp = fp = fn = 0
    for i, j in itertools.combinations(range(len(labels)), 2):
        same, together = labels[i] == labels[j], group[i] == group[j]
        tp += same and together
        fp += together and not same
        fn += same and not together
    return (tp / (tp + fp) if tp + fp else 1.0), (tp / (tp + fn) if tp + fn else 1.0)


@pytest.mark.parametrize(("embedder", "dataset", "precision", "recall"), [
    ("use", MIXED, 1.00, 0.79), ("use", HARBOR, 1.00, 0.62),
    ("e5", MIXED, 1.00, 0.32), ("e5", HARBOR, 1.00, 0.875),
])
def test_topic_threshold_keeps_topics_apart(embedder: str, dataset: dict[str, list[str]], precision: float,
                                            recall: float) -> None:
    labels = [topic for topic, qs in dataset.items() for _ in qs]
    questions = [q for qs in dataset.values() for q in qs]
    vectors = embed_for_topics(make_embedder(embedder), questions)
    got = pairwise(labels, cluster_by_similarity(vectors, TOPIC_THRESHOLDS[embedder]))
    assert got[0] >= precision - 0.005 and got[1] >= recall - 0.005, f"measured {got}, at least {precision, recall}"
