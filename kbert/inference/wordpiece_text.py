"""Word pieces back to text, as Hugging Face's BERT tokenizers decode them.

The `tokenizers` WordPiece decoder: `##` continuations are glued to the
piece before them, other pieces get a space, and each piece then has the
`cleanup` rules applied (no space before `.`, `,`, `?`, `!`, `n't`, `'s`...).
The fill-mask and token-classification pipelines print these strings.
"""

CONTINUATION = "##"
CLEANUP = (
    (" .", "."),
    (" ?", "?"),
    (" !", "!"),
    (" ,", ","),
    (" ' ", "'"),
    (" n't", "n't"),
    (" 'm", "'m"),
    (" do not", " don't"),
    (" 's", "'s"),
    (" 've", "'ve"),
    (" 're", "'re"),
)


def pieces_to_text(pieces):
    """The text a list of word pieces decodes to.

    Example:
    >>> pieces_to_text(["ada", "love", "##lace", "wrote", "notes", "."])
    'ada lovelace wrote notes.'
    >>> pieces_to_text(["##s"])  # a lone continuation keeps its marker
    '##s'
    """
    text = []
    for i, piece in enumerate(pieces):
        if i:
            piece = (
                piece[len(CONTINUATION) :]
                if piece.startswith(CONTINUATION)
                else " " + piece
            )
        for old, new in CLEANUP:
            piece = piece.replace(old, new)
        text.append(piece)
    return "".join(text)
