"""Documents for pretraining: lists of sentences, read as a stream.

The original `create_pretraining_data.py` reads text files with one sentence
per line and a blank line between documents; `read_documents` reads that
format lazily. `split_sentences` turns running text (e.g. a Wikipedia
article) into sentences with a small rule-based splitter.
"""

import re

# A sentence ends at . ! or ? (optionally followed by closing quotes or
# brackets) before whitespace and an upper-case letter, digit or quote.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
# Common abbreviations that end with a period but not a sentence.
_ABBREVIATION = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|vs|etc|e\.g|i\.e|Inc|Ltd|Co|No|Vol|"
    r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|[A-Z])\.)$"
)


def split_sentences(text):
    """Splits running text into sentences (paragraph breaks always split).

    Example:
    >>> split_sentences("BERT reads text. It was made by Google.\\nNew line")
    ['BERT reads text.', 'It was made by Google.', 'New line']
    """
    sentences = []
    for paragraph in text.split("\n"):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        start = 0
        for match in _SENTENCE_END.finditer(paragraph):
            candidate = paragraph[start : match.start()]
            if _ABBREVIATION.search(candidate):
                continue
            sentences.append(paragraph[start : match.end()].strip())
            start = match.end()
        if start < len(paragraph):
            sentences.append(paragraph[start:].strip())
    return [sentence for sentence in sentences if sentence]


def read_documents(paths):
    """Yields documents, each a list of sentences, from text files.

    The format of the original BERT tool: one sentence per line, documents
    separated by blank lines. Files are read line by line, so memory does not
    grow with their size.

    Example:
    >>> for sentences in list(read_documents([corpus_file]))[:2]:
    ...     print(sentences)
    ['ada wrote notes .', 'babbage built it .', 'the man was eating food .']
    ['the sky is blue .', 'the fox is loud .', 'paris is the capital of france .']
    """
    if isinstance(paths, str):
        paths = [paths]
    for path in paths:
        document = []
        with open(path, encoding="utf-8") as file:
            for line in file:
                line = line.strip()
                if line:
                    document.append(line)
                elif document:
                    yield document
                    document = []
        if document:
            yield document


def documents_from_texts(texts):
    """Yields documents (lists of sentences) from an iterable of running texts.

    Example:
    >>> list(documents_from_texts(["One. Two.", "Three."]))
    [['One.', 'Two.'], ['Three.']]
    """
    for text in texts:
        sentences = split_sentences(text)
        if sentences:
            yield sentences
