"""Snippets (sessions_app.search.snippets) without a database: markers, offsets, cutting."""

from __future__ import annotations

from sessions_app.search.snippets import clip, marker_pair, parse_marked


def test_markers_are_characters_none_of_the_texts_hold():
    assert marker_pair(["plain text"]) == ("\x02", "\x03")
    start, stop = marker_pair(["has \x02", "has \x1f too"])
    assert start not in "has \x02 has \x1f too" and stop not in "has \x02 has \x1f too"


def test_parsing_strips_the_markers_and_keeps_their_places():
    text, spans = parse_marked("<b>\x02Paris\x03</b> in \x02spring\x03", "\x02", "\x03")
    assert text == "<b>Paris</b> in spring"
    assert [text[s:e] for s, e in spans] == ["Paris", "spring"]


def test_a_short_text_is_kept_whole():
    snippet = clip("short one", [(0, 5)])
    assert snippet.text == "short one" and snippet.highlights == ((0, 5),)


def test_a_long_text_is_cut_at_spaces_around_the_first_match():
    text = "alpha " * 40 + "needle " + "omega " * 40
    at = text.index("needle")
    snippet = clip(text, [(at, at + 6), (len(text) - 5, len(text))])
    assert snippet.text.startswith("…alpha ") and snippet.text.endswith("omega…")
    assert len(snippet.text) <= 202
    assert [snippet.text[s:e] for s, e in snippet.highlights] == ["needle"]  # the far one is cut off


def test_a_match_in_one_huge_word_is_cut_inside_it():
    text = "x" * 500 + " needle"
    snippet = clip(text, [(501, 507)])
    [(start, end)] = snippet.highlights
    assert snippet.text[start:end] == "needle"
    assert len(snippet.text) <= 202
