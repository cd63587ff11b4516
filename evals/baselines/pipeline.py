"""The plain LlamaIndex pipeline of issue 38, as a developer would set it up: SentenceSplitter(chunk_size=512),
an in-memory VectorStoreIndex over Lotsman's own `use` embedder (through a `BaseEmbedding` adapter), a BM25
retriever (llama-index-retrievers-bm25), both fused by reciprocal rank (`QueryFusionRetriever`,
`mode="reciprocal_rerank"`, `num_queries=1`: no LLM writes extra queries).

This module imports llama-index; it is an optional extra (`pip install -c constraints.txt -e '.[baseline]'`),
so nothing else in the project imports it (the CLI `evals.baselines.llamaindex` imports it on use).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.core.schema import BaseNode
from llama_index.retrievers.bm25 import BM25Retriever
from pydantic import PrivateAttr

from stores.embedders import LotsmanEmbeddings

CHUNK_SIZE = 512
"""SentenceSplitter's chunk size in tokens (its default tokenizer; overlap left at its default, 200)."""
EMBED_WORKERS = 2
"""Bulk embedding as Lotsman's indexer does it (`stores/indexing/service.py: INDEX_EMBED_WORKERS`)."""


class LotsmanEmbedding(BaseEmbedding):
    """A LangChain-side `LotsmanEmbeddings` (here `use`) as a LlamaIndex `BaseEmbedding`: the same vectors."""

    _embedder: Any = PrivateAttr()

    def __init__(self, embedder: LotsmanEmbeddings, **kwargs: Any) -> None:
        super().__init__(model_name=embedder.name, embed_batch_size=256, **kwargs)
        self._embedder = embedder

    @classmethod
    def class_name(cls) -> str:
        return "LotsmanEmbedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embedder.embed_query(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embedder.embed_documents([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._embedder.embed_batch(list(texts), workers=EMBED_WORKERS)


@dataclass
class Pipeline:
    """A built pipeline over one corpus and what building it cost."""

    retriever: Any
    nodes: int
    seconds: dict[str, float] = field(default_factory=dict)
    """split, embed (VectorStoreIndex build), bm25 (BM25 index build), total."""

    def retrieve(self, query: str) -> list[tuple[str, str]]:
        """(file path, chunk text) of the fused chunks, best first."""
        found = self.retriever.retrieve(query)
        return [(str(n.node.metadata.get("file_path", "")), n.node.get_content()) for n in found]


def build(files: Sequence[tuple[str, str]], embedder: LotsmanEmbeddings, *, top_k: int = 20) -> Pipeline:
    """Split, embed and index `files` ((relative path, text)); each retriever and the fusion keep `top_k`."""
    t0 = time.perf_counter()
    docs = [Document(text=text, metadata={"file_path": path}) for path, text in files]
    nodes: list[BaseNode] = SentenceSplitter(chunk_size=CHUNK_SIZE).get_nodes_from_documents(docs)
    t1 = time.perf_counter()
    index = VectorStoreIndex(nodes, embed_model=LotsmanEmbedding(embedder))
    t2 = time.perf_counter()
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=top_k)
    t3 = time.perf_counter()
    fusion = QueryFusionRetriever([index.as_retriever(similarity_top_k=top_k), bm25], llm=MockLLM(),
                                  mode=FUSION_MODES.RECIPROCAL_RANK,  # "reciprocal_rerank"
                                  num_queries=1, similarity_top_k=top_k, use_async=False)
    return Pipeline(fusion, len(nodes), {"split": t1 - t0, "embed": t2 - t1, "bm25": t3 - t2, "total": t3 - t0})
