"""Each summary row's own words and vectors, by passage, kept beside it
(``SummaryIndex``) so a question can be compared with the rows cheaply.

A row is cut into passages as episodes are (``semantic.passages.passage_spans``:
runs of whole sentences); each gets its terms (lower-case words without
stop words, a plural's ``s`` dropped: the same for the question) and its
vector from the sentence encoder. Written after the row is created,
regenerated, edited or restored (``refresh``, sent by the row's post-save
signal after commit); a deleted row takes its index with it. ``digest``
names the text an index was made from: the context reads an index only
while it matches its row, so a row changed by a path that sent no refresh
is compared by its words alone (``words_of``) until the next refresh.
"""

from __future__ import annotations

import hashlib
import logging
import re

from celery import shared_task

from nexus.dispatch import dispatch
from sessions_app import semantic
from sessions_app.search.stopwords import STOP_WORDS
from sessions_app.semantic.encoder import encoder
from sessions_app.semantic.passages import joined, passage_spans
from sessions_app.semantic.vectors import to_bytes
from summaries.models import Summary, SummaryIndex

logger = logging.getLogger("nexus.summaries")

_WORD = re.compile(r"[a-z0-9]+")


def digest_of(content: str) -> str:
    return hashlib.sha1(content.encode("utf-8", "surrogatepass")).hexdigest()


def terms(text: str) -> list[str]:
    """The words of ``text`` a question is matched by: lower case, no stop
    words, a plural's trailing ``s`` dropped ("invoices" and "invoice" meet)."""
    found = []
    for word in _WORD.findall(text.lower()):
        if word in STOP_WORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        found.append(word)
    return found


def passages_of(content: str) -> list[tuple[int, int]]:
    """A row's passages: ``[start, end)`` offsets into its content."""
    return passage_spans(content)


def words_of(content: str) -> list[list[str]]:
    """Each passage's terms, as the index stores them."""
    return [sorted(set(terms(content[start:end]))) for start, end in passages_of(content)]


def refresh(summary_pk: int) -> bool:
    """Write the row's index from its current text; False when the row is gone."""
    row = Summary.objects.filter(pk=summary_pk).values_list("content", flat=True).first()
    if row is None:
        return False
    spans = passages_of(row)
    vectors = b""
    if semantic.enabled() and spans:
        matrix = encoder().encode([joined(row[start:end]) for start, end in spans])
        vectors = to_bytes(matrix)
    # The row may have gone meanwhile: update_or_create would then fail on its foreign key.
    if Summary.objects.filter(pk=summary_pk).exists():
        SummaryIndex.objects.update_or_create(
            summary_id=summary_pk,
            defaults={"digest": digest_of(row), "words": words_of(row), "vectors": vectors},
        )
    return True


@shared_task(name="summaries.summary_index.refresh_index", acks_late=True, ignore_result=True)
def refresh_index(summary_pk: int) -> bool:
    return refresh(summary_pk)


def queue_refresh(summary_pk: int) -> None:
    """Send ``refresh_index`` for the row (call after commit). Never raises:
    a row without a current index is still compared by its words."""
    try:
        dispatch(refresh_index, {"summary_pk": summary_pk})
    except Exception as exc:  # noqa: BLE001 - kombu raises many kinds for an unreachable broker
        logger.warning("summary index enqueue failed", extra={"summary_pk": summary_pk, "error": str(exc)})


def refresh_stale(*, batch: int = 200) -> int:
    """Write the index of every row that has none or an outdated one (rows
    written before indexes existed, or by a path that sent no refresh), in
    batches of ``batch`` rows; the number written."""
    written = 0
    after = 0
    while True:
        rows = list(
            Summary.objects.filter(pk__gt=after)
            .order_by("pk")
            .values_list("pk", "content", "index__digest")[:batch]
        )
        if not rows:
            return written
        for pk, content, digest in rows:
            if digest != digest_of(content):
                written += refresh(pk)
        after = rows[-1][0]
