"""The same question over the same evidence gets the same answer whatever the interpreter's hash seed.

Sets and dicts of strings iterate in an order that follows `PYTHONHASHSEED`; an analysis that let such an
order choose between passages answered one question two ways on one index. Each run is a fresh interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = r'''
import json
from nodes.answer_composition import compose_extractive
from nodes.context_analysis import analyze
from nodes.evidence import EvidenceRow
from nodes.terms import key_terms

PATH = "pkg/handlers.py"
MODULE = ('"""Default exception handlers."""\n\nimport json\n\n\n'
          "def http_exception_handler(request, exc):\n"
          "    headers = getattr(exc, 'headers', None)\n"
          "    if not is_body_allowed_for_status_code(exc.status_code):\n"
          "        return Response(status_code=exc.status_code, headers=headers)\n"
          "    return JSONResponse({'detail': exc.detail}, status_code=exc.status_code)")
rows = [
    EvidenceRow(id=f"mod-{i}", path=f"pkg/m{i}.py", layer="C1_SYMBOL_CATALOG", span_start=1, span_end=40,
                content=f"module pkg.m{i}\nDefines: handler_{i}", metadata={"kind": "module"}, lanes={"code": i})
    for i in range(4)
] + [
    EvidenceRow(id="module-card", path=PATH, layer="C1_SYMBOL_CATALOG", span_start=1, span_end=10,
                content="module pkg.handlers\nDefault exception handlers.\nDefines: http_exception_handler",
                metadata={"kind": "module"}, lanes={"code": 5}),
    EvidenceRow(id="function-card", path=PATH, layer="C1_SYMBOL_CATALOG", span_start=6, span_end=10,
                content="def http_exception_handler(request, exc)\npkg.handlers.http_exception_handler",
                lanes={"code": 6}),
    EvidenceRow(id="whole", path=PATH, layer="C0_SOURCE_CHUNKS", span_start=1, span_end=10, content=MODULE,
                lanes={"code": 7}),
    EvidenceRow(id="doc", path="docs/errors.md", layer="D0_DOC_CHUNKS", span_start=1, span_end=1,
                content="An HTTP exception handler returns the status code of the exception.", lanes={"ranked": 1}),
]
question = "What does http_exception_handler return when the status code does not allow a body?"
analysis = analyze(question, key_terms(question), rows, True)
answer = compose_extractive(question, analysis, None)
print(json.dumps({"spans": [[s.path, s.start_line, s.end_line, s.row_id] for s in analysis.spans],
                  "pool": [[s.path, s.start_line, s.end_line, s.row_id] for s in analysis.passages],
                  "answer": answer.text}))
'''


def _run(seed: str, script: Path) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120,
                          cwd=Path(__file__).resolve().parents[2], check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_answer_does_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    script = tmp_path / "analyze_once.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n{SCRIPT}",
                      encoding="utf-8")
    outputs = {seed: _run(seed, script) for seed in ("0", "1", "2", "3", "4", "5")}
    assert len(set(outputs.values())) == 1, outputs
    assert '"whole"' in outputs["0"], "the function's source lines are quoted, not its card"
