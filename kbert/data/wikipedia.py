"""206 English Wikipedia articles from gensim's test data (`gensim==4.4.0`).

A shortened 2016 `pages-articles` XML dump; the wikitext is reduced to plain
text with a few regular expressions (templates, tables, references, markup and
link targets dropped), good enough for corpus statistics and pretraining
smoke tests, not a faithful MediaWiki renderer.
"""

import bz2
import html
import re
import xml.etree.ElementTree as ElementTree

from kbert.data.packages import read_package_member

_MEMBER = (
    "gensim/test/test_data/"
    "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
)
_RULES = [
    (re.compile(r"<!--.*?-->", re.S), ""),
    (re.compile(r"<ref[^>/]*/>"), ""),
    (re.compile(r"<ref[^>]*>.*?</ref>", re.S), ""),
    (re.compile(r"<[^>]+>"), ""),
    (re.compile(r"^\{\|.*?^\|\}", re.S | re.M), ""),  # tables
    # File/Image/Category links, possibly holding nested [[...]] links.
    (
        re.compile(r"\[\[(?:File|Image|Category):(?:[^\[\]]|\[\[[^\]]*\]\])*\]\]", re.I),
        "",
    ),
    (re.compile(r"\[\[(?:[^|\]]*\|)?([^\]]*)\]\]"), r"\1"),  # [[target|text]]
    (re.compile(r"\[https?://[^\s\]]+\s*([^\]]*)\]"), r"\1"),  # [url text]
    (re.compile(r"'{2,}"), ""),  # bold / italics
    (re.compile(r"^=+\s*(.*?)\s*=+\s*$", re.M), r"\1"),  # headings
    (re.compile(r"^[*#:;]+\s*", re.M), ""),  # list markers
    (re.compile(r"\n{3,}"), "\n\n"),
]
_TEMPLATE = re.compile(r"\{\{[^{}]*\}\}")


def wikitext_to_text(wikitext):
    """Plain text from wikitext, by simple regular-expression stripping."""
    text = html.unescape(wikitext)
    previous = None
    while previous != text:  # templates nest: strip innermost first
        previous, text = text, _TEMPLATE.sub("", text)
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text.strip()


def wikipedia_articles():
    """Yield `(title, plain_text)` for each of the 206 pages in the dump.

    Redirect pages are kept (their text is e.g. `"REDIRECT Computer
    accessibility"`); filter on `text.startswith("REDIRECT")` to drop them.

    Example:
    >>> title, text = next(wikipedia_articles())
    >>> title
    'AccessibleComputing'
    """
    data = bz2.decompress(read_package_member("gensim", _MEMBER))
    namespace = "{http://www.mediawiki.org/xml/export-0.10/}"
    for page in ElementTree.fromstring(data).iter(f"{namespace}page"):
        title = page.findtext(f"{namespace}title")
        wikitext = page.findtext(f"{namespace}revision/{namespace}text") or ""
        yield title, wikitext_to_text(wikitext)
