import json

import pytest

from kbert.utils.labelled_files import encode_labels, read_examples


def test_reads_csv_and_jsonl_with_pairs(tmp_path):
    csv_path = tmp_path / "data.csv"
    csv_path.write_text('text,other,label\n"a, b",x,pos\nc,y,neg\n', encoding="utf-8")
    texts, labels = read_examples(str(csv_path), "text", "label", pair_column="other")
    assert texts == (["a, b", "c"], ["x", "y"]) and labels == ["pos", "neg"]
    jsonl_path = tmp_path / "data.jsonl"
    jsonl_path.write_text(
        "\n".join(json.dumps(r) for r in [{"t": "é", "y": 1}, {"t": "b", "y": 0}])
    )
    assert read_examples(str(jsonl_path), "t", "y") == (["é", "b"], [1, 0])


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "the file is empty"),
        (b"text,label\n", "no examples"),
        (
            b"review,label\nfine,pos\n",
            r"no column \['text'\]; the file has columns \['label', 'review'\]",
        ),
        (b"text,label\nfine,\n", "line 2 has no value in column 'label'"),
        (b"text,label\ncaf\xe9,pos\n", "not UTF-8 .*line 2"),
    ],
)
def test_bad_files_are_clear_errors(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        read_examples(str(path), "text", "label")


def test_unknown_labels_are_named():
    with pytest.raises(
        ValueError, match=r"unknown labels \['maybe'\]; known labels are \['neg', 'pos'\]"
    ):
        encode_labels(["pos", "maybe"], ["neg", "pos"], "test.csv")


def test_missing_file():
    with pytest.raises(ValueError, match="nope.csv: no such file"):
        read_examples("nope.csv", "text", "label")
