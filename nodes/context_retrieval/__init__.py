"""context_retrieval: the adapter of seed 000 §11 (lanes), the pure merge, and the LangChain retriever."""
