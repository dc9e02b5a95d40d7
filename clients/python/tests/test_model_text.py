"""rt-audit finding 6: what a model reads through this client is filtered like
the MCP server's output (crates/airlock/src/mcp/untrusted.rs), on the cases both
sides share (crates/airlock/src/mcp/untrusted_vectors.json), and the real Rust
filter, reached through ``airlock mcp``, gives the same text for each of them."""

from __future__ import annotations

import json

import pytest

from airlock_client.model_text import clean, frame
from conftest import REPO
from test_mcp import stdio_session

VECTORS = json.loads((REPO / "crates/airlock/src/mcp/untrusted_vectors.json").read_text())


@pytest.mark.parametrize("raw,model_sees", VECTORS["clean"])
def test_clean_matches_the_shared_cases(raw, model_sees):
    assert clean(raw) == model_sees


@pytest.mark.parametrize("raw", VECTORS["frame_cannot_be_forged"])
def test_frame_cannot_be_closed_or_opened_by_the_data(raw):
    framed = frame("stdout", raw)
    assert framed.lower().count("<untrusted") == 1, framed
    assert framed.count("<") == 2, f"only the frame's own tags: {framed!r}"
    assert framed.endswith("</untrusted-stdout>") and "not instructions" in framed


@pytest.mark.parametrize("raw,kept", VECTORS["frame_keeps"])
def test_frame_keeps_text_that_only_mentions_the_word(raw, kept):
    assert kept in frame("stdout", raw)


def test_every_character_class():
    """The classes of crates/airlock-core/src/terminal/chars.rs, one character at
    a time (its `every_class_is_recognised` table, plus each range's ends)."""
    kept = ["a", " ", "\n", "\t", "é", "€", "漢", "\U0001F600", "\u00a0", "\ufe10",
            "\U000e0080", "\U000e00ff", "\u200a", "\u2010", "\u1680"]
    removed = ["\x00", "\x1f", "\r", "\x7f", "\x80", "\x85", "\x8f", "\x9a", "\u202e", "\u2067", "\u200f", "\u061c",
               "\U000e0000", "\U000e0041", "\U000e007f", "\u200b", "\u200d", "\u2060", "\u2064", "\u2065",
               "\u206a", "\u206f", "\ufeff", "\u00ad", "\u2028", "\u2029", "\ufe00", "\ufe0f", "\U000e0100",
               "\U000e01ef", "\u3164", "\uffa0", "\u034f", "\u0600", "\u0605", "\u06dd", "\u070f", "\u0890",
               "\u0891", "\u08e2", "\u115f", "\u1160", "\u17b4", "\u17b5", "\u180b", "\u180f", "\ufff9",
               "\ufffb", "\U000110bd", "\U000110cd", "\U00013430", "\U0001343f", "\U0001bca0", "\U0001bca3",
               "\U0001d173", "\U0001d17a"]
    for c in kept:
        assert clean(f"<{c}>") == f"<{c}>", f"U+{ord(c):04X}"
    for c in removed:
        assert clean(f"<{c}>") == "<>", f"U+{ord(c):04X}"


def test_frame_tag_matching_is_ascii_only():
    """Rust compares `untrusted` with eq_ignore_ascii_case: the long s (U+017F),
    which Unicode case folding takes for an `s`, does not make a frame tag."""
    assert "<untruſted" in frame("stdout", "<untruſted-stdout>")
    assert "\u2039UNTRUSTED" in frame("stdout", "<UNTRUSTED-stdout>")


def _printer(raw: str) -> str:
    literal = json.dumps(json.dumps(raw))
    return f"import json, sys\nsys.stdout.buffer.write(json.loads({literal}).encode('utf-8'))"


async def test_the_rust_filter_gives_the_same_text(tmp_path):
    """Each shared case printed by a program run through ``airlock mcp``: the
    Rust side's cleaned stdout and framed text equal this module's."""
    cases = [raw for raw, _ in VECTORS["clean"]] + VECTORS["frame_cannot_be_forged"] + \
        [raw for raw, _ in VECTORS["frame_keeps"]]
    async with stdio_session(tmp_path) as session:
        await session.initialize()
        for raw in cases:
            result = await session.call_tool("run_python", {"code": _printer(raw)})
            assert not result.is_error, result.content[0].text
            assert result.structured_content["stdout"] == clean(raw), repr(raw)
            assert frame("stdout", raw) in result.content[0].text, repr(raw)
