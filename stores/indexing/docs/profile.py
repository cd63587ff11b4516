"""Document attributes (id, title, type, domain...): from frontmatter, else derived from path and headings."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from stores.indexing.docs.frontmatter import string_list
from stores.indexing.docs.markdown import MarkdownDoc

DOC_TYPE_DIRS: dict[str, str] = {
    "architecture": "architecture",
    "arch": "architecture",
    "logic": "logic",
    "domains": "domains",
    "api": "api",
    "tutorial": "tutorial",
    "tutorials": "tutorial",
    "advanced": "advanced",
    "how-to": "how-to",
    "howto": "how-to",
    "reference": "reference",
}
"""Directory name → doc_type when a file has no frontmatter `doc_type`."""

LANGUAGE_DIRS = frozenset(
    {"ru", "en", "de", "es", "fr", "it", "ja", "ko", "pt", "pt-br", "zh", "zh-hans", "zh-hant", "zh-cn"}
    | {"zh-tw", "uk", "tr", "pl", "fa", "he", "vi", "nl", "cs"}
)
"""Translation directories (mkdocs i18n layouts such as `docs/ru/docs/`) that carry no domain meaning."""

_CONTAINER_DIRS = frozenset({"docs", "doc", "domains"})
"""`docs/` itself and `docs/domains/` (a folder *of* domains) are not a domain."""


@dataclass(frozen=True, slots=True)
class DocProfile:
    """What every docs layer row says about its document."""

    doc_id: str
    title: str
    doc_type: str
    domain: str | None
    subdomain: str | None
    status: str | None = None
    tags: list[str] = field(default_factory=list)
    related_docs: list[str] = field(default_factory=list)
    related_code: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    lang: str = "en"

    def base_metadata(self) -> dict[str, Any]:
        """Metadata shared by all rows of the document (so domain filters work on every layer)."""
        return {
            "doc_id": self.doc_id,
            "doc_title": self.title,
            "doc_type": self.doc_type,
            "domain": self.domain,
            "subdomain": self.subdomain,
            "lang": self.lang,
        }


def build_profile(doc: MarkdownDoc, frontmatter: dict[str, Any]) -> DocProfile:
    """Combine frontmatter with what the path, headings and text say.

    Args:
        doc: The parsed markdown file.
        frontmatter: Parsed frontmatter (possibly empty).

    Returns:
        The document profile; frontmatter values win over derived ones.
    """
    derived_domain, derived_subdomain = derive_domain(doc.path)
    domain = _text(frontmatter.get("domain"))
    if domain and domain.lower() != (derived_domain or "").lower():
        derived_subdomain = None  # a path subdomain only makes sense under the path's own domain
    return DocProfile(
        doc_id=_text(frontmatter.get("id")) or posixpath.splitext(doc.path)[0],
        title=_text(frontmatter.get("title")) or derive_title(doc),
        doc_type=_text(frontmatter.get("doc_type") or frontmatter.get("type")) or derive_doc_type(doc.path),
        domain=domain or derived_domain,
        subdomain=_text(frontmatter.get("subdomain")) or derived_subdomain,
        status=_text(frontmatter.get("status")),
        tags=string_list(frontmatter.get("tags")),
        related_docs=string_list(frontmatter.get("related_docs")),
        related_code=string_list(frontmatter.get("related_code")),
        entities=string_list(frontmatter.get("entities")),
        lang=detect_language("\n".join(doc.lines[doc.body_start - 1 : doc.body_start + 200])),
    )


def derive_title(doc: MarkdownDoc) -> str:
    """First `# ` heading, else the first heading of any level, else the file stem."""
    for heading in doc.headings:
        if heading.level == 1:
            return heading.text
    if doc.headings:
        return doc.headings[0].text
    return posixpath.splitext(posixpath.basename(doc.path))[0]


def derive_doc_type(path: str) -> str:
    """doc_type from the first directory with a known meaning (`docs/logic/...` → `logic`), else `doc`."""
    for part in path.lower().split("/")[:-1]:
        if part in DOC_TYPE_DIRS:
            return DOC_TYPE_DIRS[part]
    return "doc"


def derive_domain(path: str) -> tuple[str | None, str | None]:
    """Domain and subdomain: the first two meaningful directories under `docs/`.

    Language directories (`ru`, `en`...), containers (`docs`, `domains`) and doc-type directories
    (`logic`, `tutorial`... — they already give `doc_type`) are skipped, so
    `docs/ru/docs/tutorial/security/x.md` gives `("security", None)`, `docs/logic/rag/x.md` gives
    `("rag", None)` and `docs/domains/billing/invoices/x.md` gives `("billing", "invoices")`.
    Outside `docs/` a README-like file belongs to its own folder: `agent/app/modules/rag/README.md` gives
    `("rag", None)`.
    """
    parts = path.split("/")[:-1]
    lowered = [part.lower() for part in parts]
    skipped = LANGUAGE_DIRS | _CONTAINER_DIRS | DOC_TYPE_DIRS.keys() | {"src"}
    if "docs" not in lowered:
        meaningful = [part for part in parts if part.lower() not in skipped]
        return (meaningful[-1] if meaningful else None), None
    parts = parts[lowered.index("docs") + 1 :]
    meaningful = [part for part in parts if part.lower() not in skipped]
    domain = meaningful[0] if meaningful else None
    subdomain = meaningful[1] if len(meaningful) > 1 else None
    return domain, subdomain


def detect_language(text: str) -> str:
    """`ru` when Cyrillic letters dominate the Latin ones, else `en` (good enough for ru/en corpora)."""
    cyrillic = len(re.findall(r"[а-яА-ЯёЁ]", text))
    latin = len(re.findall(r"[a-zA-Z]", text))
    return "ru" if cyrillic > latin * 0.5 and cyrillic > 0 else "en"


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None
