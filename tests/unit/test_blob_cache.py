"""The blob cache's JSON of a record (what a resumed or unchanged index job reads back)."""

from __future__ import annotations

import dataclasses
import json

from stores.indexing.cache import record_json
from stores.indexing.records import ChunkRecord
from stores.layers import Layer


def test_a_cached_record_is_stored_as_its_fields():
    """The same object `dataclasses.asdict` gave, without its deep copy of every metadata value."""
    record = ChunkRecord(layer=Layer.C1_SYMBOL_CATALOG, path="pkg/mod.py", title="pkg.mod.f", content="def f(): ...",
                         span_start=3, span_end=4, metadata={"qname": "pkg.mod.f", "section_path": ["a", {"b": 1}]},
                         embed=False, embed_text="f")
    assert json.dumps(record_json(record), sort_keys=True) == json.dumps(dataclasses.asdict(record), sort_keys=True)
