"""Building blocks of the docs pipeline (see `stores.indexing.docs_pipeline.index_markdown`)."""
