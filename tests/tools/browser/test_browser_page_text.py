"""HTML, Markdown and plain text → page text with link marks."""

from __future__ import annotations

from openchatml.tools.browser.page_text import (
    html_page_text,
    join_url,
    markdown_page_text,
    page_text,
    plain_page_text,
)


def test_html_links_images_headings_lists() -> None:
    html = (
        "<html><head><title> A  page </title><style>p{color:red}</style></head><body>"
        "<h2>Intro</h2><p>Go <a href='b.html'>there</a>, <a href='https://x.org/y'>out</a>, "
        "<a href='b.html'>again</a>, <a href='#top'>up</a>, <a href='mailto:a@b'>mail</a>.</p>"
        "<ul><li>one</li><li>two <img alt='pic'></li></ul><pre>  keep\n    indent</pre></body></html>"
    )
    page = html_page_text(html, "https://site.com/dir/a.html")
    assert page.title == "A page"
    assert page.links == ("https://site.com/dir/b.html", "https://x.org/y")
    assert page.text == (
        "## Intro\n\n"
        "Go 【0†there】, 【1†out†x.org】, 【0†again】, up, mail.\n\n"
        "  * one\n  * two [Image 0: pic]\n\n"
        "  keep\n    indent"
    )
    assert "color" not in page.text


def test_brackets_in_documents_never_look_like_marks() -> None:
    page = plain_page_text("see 【1†L2】 here\u200b", "corpus://c/a.txt", "A")
    assert page.text == "see 〖1†L2〗 here"
    assert "【" not in html_page_text("<p>【x】</p>", "https://a.b/").text


def test_markdown_links_and_title() -> None:
    page = markdown_page_text("# Title\n\n[a](sub/b.md) ![img](i.png) [c](http://o.org)", "corpus://c/d/x.md")
    assert page.title == "Title"
    assert page.links == ("corpus://c/d/sub/b.md", "http://o.org")
    assert page.text == "# Title\n\n【0†a】 [Image 0: img] 【1†c†o.org】"


def test_join_url_for_unknown_schemes() -> None:
    assert join_url("corpus://c/a/b.md", "../x.md") == "corpus://c/x.md"
    assert join_url("corpus://c/a/b.md", "https://e.com") == "https://e.com"
    assert join_url("https://e.com/a/b", "c") == "https://e.com/a/c"


def test_page_text_dispatches_on_format() -> None:
    assert page_text("<b>x</b>", "https://e.com/", "html").text == "x"
    assert page_text("<b>x</b>", "https://e.com/", "text").text == "<b>x</b>"
    assert page_text("x", "https://e.com/", "markdown", "T").title == "T"
