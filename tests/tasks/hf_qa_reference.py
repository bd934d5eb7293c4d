"""Hugging Face's question-answering pipeline, as transformers 4.57 ran it.

transformers 5 removed `pipeline("question-answering")` (it now says "use
the text-generation pipeline"). This is its fast-tokenizer path ported
line by line from `QuestionAnsweringPipeline.preprocess` / `postprocess`
(transformers 4.57.3, src/transformers/pipelines/question_answering.py), on
transformers' own tokenizer, model and `select_starts_ends` (kept in
`pipelines/document_question_answering.py`, the same function). Only
plumbing is dropped (argument parsing, batching, left padding).
"""

import numpy as np


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
    import torch
    from transformers.pipelines.document_question_answering import select_starts_ends

    # --- preprocess ---
    if max_seq_len is None:
        max_seq_len = min(tokenizer.model_max_length, 384)
    if doc_stride is None:
        doc_stride = min(max_seq_len // 2, 128)
    encoded_inputs = tokenizer(
        text=question,
        text_pair=context,
        padding="do_not_pad",
        truncation="only_second",
        max_length=max_seq_len,
        stride=doc_stride,
        return_token_type_ids=True,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
    )
    num_spans = len(encoded_inputs["input_ids"])
    p_mask = [
        [tok != 1 for tok in encoded_inputs.sequence_ids(span_id)]
        for span_id in range(num_spans)
    ]
    features = []
    for span_idx in range(num_spans):
        input_ids = encoded_inputs["input_ids"][span_idx]
        cls_indices = np.nonzero(np.array(input_ids) == tokenizer.cls_token_id)[0]
        for cls_index in cls_indices:
            p_mask[span_idx][cls_index] = 0
        features.append(
            {
                "input_ids": input_ids,
                "attention_mask": encoded_inputs["attention_mask"][span_idx],
                "token_type_ids": encoded_inputs["token_type_ids"][span_idx],
                "p_mask": p_mask[span_idx],
                "encoding": encoded_inputs.encodings[span_idx],
            }
        )

    # --- forward ---
    outputs = []
    for feature in features:
        with torch.no_grad():
            result = model(
                **{
                    k: torch.tensor([feature[k]])
                    for k in ("input_ids", "attention_mask", "token_type_ids")
                }
            )
        outputs.append(
            {
                **feature,
                "start": result.start_logits.numpy(),
                "end": result.end_logits.numpy(),
            }
        )

    # --- postprocess ---
    min_null_score = 1000000
    answers = []
    for output in outputs:
        pre_topk = top_k * 2 + 10 if align_to_words else top_k
        starts, ends, scores, min_null_score = select_starts_ends(
            output["start"],
            output["end"],
            np.array([output["p_mask"]]),
            np.array([output["attention_mask"]]),
            min_null_score,
            pre_topk,
            handle_impossible_answer,
            max_answer_len,
        )
        enc = output["encoding"]
        for s, e, score in zip(starts, ends, scores):
            start_index, end_index = get_indices(enc, s, e, 1, align_to_words)
            target_answer = context[start_index:end_index]
            answer = next(
                (a for a in answers if a["answer"].lower() == target_answer.lower()), None
            )
            if answer:
                answer["score"] += score.item()
            else:
                answers.append(
                    {
                        "score": score.item(),
                        "start": start_index,
                        "end": end_index,
                        "answer": context[start_index:end_index],
                    }
                )
    if handle_impossible_answer:
        answers.append({"score": min_null_score, "start": 0, "end": 0, "answer": ""})
    answers = sorted(answers, key=lambda x: x["score"], reverse=True)[:top_k]
    return answers, outputs


def get_indices(enc, s, e, sequence_index, align_to_words):
    if align_to_words:
        try:
            start_word = enc.token_to_word(s)
            end_word = enc.token_to_word(e)
            start_index = enc.word_to_chars(start_word, sequence_index=sequence_index)[0]
            end_index = enc.word_to_chars(end_word, sequence_index=sequence_index)[1]
        except Exception:
            start_index = enc.offsets[s][0]
            end_index = enc.offsets[e][1]
    else:
        start_index = enc.offsets[s][0]
        end_index = enc.offsets[e][1]
    return start_index, end_index
