"""HTML to text for the web tools: what is dropped, where lines break, whitespace, malformed pages, generated text."""

from __future__ import annotations

import html

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ironhive.adapters.web.html_text import html_to_text, tidy


def test_scripts_styles_and_other_invisible_parts_are_dropped() -> None:
    page = html_to_text(
        "<html><head><title>T</title><style>h1 { x: 1 }</style><script>var head = 1;</script></head><body>"
        "<script type='module'>import x from 'y'</script><noscript>enable JS</noscript><template><p>tpl</p></template>"
        "<svg><text>chart</text></svg><iframe>frame</iframe><object>obj</object><canvas>pixels</canvas>"
        "<!-- a comment --><p>Visible</p></body></html>"
    )
    assert (page.title, page.text) == ("T", "Visible")


def test_headings_and_blocks_get_their_own_line_links_and_inline_tags_stay_inline() -> None:
    page = html_to_text(
        "<h1>Guide</h1><p>Read <a href='/docs'>the <b>docs</b></a>, then <em>run</em> it.</p>"
        "<ul><li>one</li><li>two</li></ul><table><tr><td>a</td><td>b</td></tr></table>line<br>break<hr>end"
    )
    assert page.text.splitlines() == [
        "Guide",
        "Read the docs, then run it.",
        "one",
        "two",
        "a",
        "b",
        "line",
        "break",
        "end",
    ]


def test_spaces_collapse_source_lines_stay_lines_and_entities_decode() -> None:
    # A line break in the source stays one (a <pre> block keeps its lines); empty lines go.
    page = html_to_text("<p>  many \t spaces&nbsp;&nbsp;and\n\n lines  </p><p>caf&eacute; &lt;tag&gt; &#x1F600;</p>")
    assert page.text == "many spaces and\nlines\ncafé <tag> 😀"
    assert html_to_text("<pre>def f():\n    return 1\n</pre>").text == "def f():\nreturn 1"


@pytest.mark.parametrize(
    ("markup", "text"),
    [
        ("<p>unclosed <b>bold<p>next", "unclosed bold\nnext"),
        ("</div></p>stray end tags<div>", "stray end tags"),
        ("<p>a<script>never closed", "a"),
        ("plain text, no tags at all", "plain text, no tags at all"),
        ("", ""),
        ("<title>Only a title</title>", ""),
    ],
)
def test_malformed_pages_read_as_a_browser_reads_them(markup: str, text: str) -> None:
    assert html_to_text(markup).text == text


def test_the_title_is_one_line_and_a_long_text_is_cut() -> None:
    page = html_to_text("<title>\n  A\n  title </title><p>" + "word " * 100 + "</p>", max_characters=20)
    assert (page.title, page.text, page.truncated) == ("A title", "word word word word", True)
    assert html_to_text("<p>short</p>", max_characters=20).truncated is False


_words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")), max_size=40)


@given(st.lists(_words, min_size=1, max_size=6))
def test_generated_paragraphs_come_back_one_per_line(paragraphs: list[str]) -> None:
    markup = "".join(f"<p>{html.escape(text)}</p>" for text in paragraphs)
    expected = [line for line in (tidy(text) for text in paragraphs) if line]
    assert html_to_text(markup).text.splitlines() == expected
