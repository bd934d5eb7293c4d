"""The answers Hugging Face's question-answering pipeline gives, for parity tests.

transformers 5 removed `pipeline("question-answering")` (it now points to the
text-generation pipeline), so this rebuilds what its fast-tokenizer path did
in transformers 4.57 from transformers' own pieces: the fast tokenizer's
overflowing windows and offsets, `BertForQuestionAnswering`, and the span
scoring `select_starts_ends` that transformers still ships (in
`pipelines/document_question_answering.py`, the function the QA pipeline
used). The glue follows that pipeline's documented behaviour: question first,
`truncation="only_second"`, the question, special tokens and padding masked
out of the answer (the `[CLS]` token kept for "no answer"), `2 * top_k + 10`
candidates per window when aligning to words, answers widened to the words
of their first and last tokens, equal texts (ignoring case) merged by adding
their scores, and the no-answer score appended before the final sort.
"""

import numpy as np


def _windows(tokenizer, question, context, max_seq_len, doc_stride):
    return tokenizer(
        text=question,
        text_pair=context,
        truncation="only_second",
        max_length=max_seq_len,
        stride=doc_stride,
        return_token_type_ids=True,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
    )


def answer_chars(encoding, start, end, align_to_words):
    """Character span of token span `(start, end)` in the context (sequence 1)."""
    if align_to_words:
        try:
            first = encoding.word_to_chars(encoding.token_to_word(start), sequence_index=1)
            last = encoding.word_to_chars(encoding.token_to_word(end), sequence_index=1)
            return first[0], last[1]
        except Exception:  # tokens outside any word: fall back to offsets
            pass
    return encoding.offsets[start][0], encoding.offsets[end][1]


def hf_pipeline_answer(
    model,
    tokenizer,
    question,
    context,
    top_k=1,
    doc_stride=None,
    max_answer_len=15,
    max_seq_len=None,
    handle_impossible_answer=False,
    align_to_words=True,
):
    """`(answers, windows)`: the pipeline's answers (a list, best first) and, per
    window, its `input_ids` and numpy `start` / `end` logits."""
    import torch
    from transformers.pipelines.document_question_answering import select_starts_ends

    max_seq_len = max_seq_len or min(tokenizer.model_max_length, 384)
    doc_stride = doc_stride or min(max_seq_len // 2, 128)
    encoded = _windows(tokenizer, question, context, max_seq_len, doc_stride)

    null_score = 1000000.0
    answers = []
    windows = []
    for index, encoding in enumerate(encoded.encodings):
        ids = encoded["input_ids"][index]
        in_context = np.array([s == 1 for s in encoded.sequence_ids(index)])
        not_answer = (~in_context).astype("int64")
        not_answer[np.array(ids) == tokenizer.cls_token_id] = 0
        with torch.no_grad():
            output = model(
                input_ids=torch.tensor([ids]),
                attention_mask=torch.tensor([encoded["attention_mask"][index]]),
                token_type_ids=torch.tensor([encoded["token_type_ids"][index]]),
            )
        start_logits = output.start_logits.numpy()
        end_logits = output.end_logits.numpy()
        windows.append({"input_ids": ids, "start": start_logits, "end": end_logits})
        starts, ends, scores, null_score = select_starts_ends(
            start_logits,
            end_logits,
            not_answer[None],
            np.array([encoded["attention_mask"][index]]),
            null_score,
            2 * top_k + 10 if align_to_words else top_k,
            handle_impossible_answer,
            max_answer_len,
        )
        for start, end, score in zip(starts, ends, scores):
            first, last = answer_chars(encoding, start, end, align_to_words)
            text = context[first:last]
            same = [a for a in answers if a["answer"].lower() == text.lower()]
            if same:
                same[0]["score"] += score.item()
            else:
                answers.append(
                    {"score": score.item(), "start": first, "end": last, "answer": text}
                )
    if handle_impossible_answer:
        answers.append({"score": null_score, "start": 0, "end": 0, "answer": ""})
    answers.sort(key=lambda answer: answer["score"], reverse=True)
    return answers[:top_k], windows
