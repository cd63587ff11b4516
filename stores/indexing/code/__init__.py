"""Building blocks of the code pipeline (see `stores.indexing.code_pipeline.index_python`)."""
