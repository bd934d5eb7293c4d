"""Attention for torch inference, without Keras' copies of query, key and value.

`keras.ops.dot_product_attention` on torch makes query, key and value
contiguous before `scaled_dot_product_attention` (three copies per layer),
where torch's kernel reads the (batch, heads, length, head_dim) transposed
views as they are, as transformers passes them. In inference (torch,
autograd off) kbert's layers call the kernel on the views: on an AMD Zen 4
the copies were 84 ms of a 32 x 256-token MiniLM encoder's 2.6 s of op time
(torch.profiler, two calls). The boolean mask becomes an additive one, 0
where attended and a large negative elsewhere, as Keras builds it, so a row
with no key to attend to comes out as it does through Keras' op. Everywhere
else the function returns None and Keras' op runs.

Example:
>>> q = np.random.rand(2, 5, 2, 4).astype("float32")
>>> mask = np.ones((2, 1, 1, 5), bool)
>>> out = torch_inference_attention(q, q, q, mask, large_negative=-1e9)
>>> out is None or tuple(out.shape) == (2, 5, 2, 4)
True
"""

import keras


def torch_inference_attention(query, key, value, mask, large_negative):
    """Softmax attention over (batch, length, heads, head_dim) inputs, or None.

    `mask`: boolean, broadcastable to (batch, heads, queries, keys), or None.
    """
    if keras.backend.backend() != "torch":
        return None
    import torch  # lazy: this path is torch's

    if torch.is_grad_enabled():
        return None
    query, key, value = (
        keras.ops.convert_to_tensor(x).transpose(1, 2) for x in (query, key, value)
    )
    if mask is not None:
        mask = keras.ops.convert_to_tensor(mask)
        mask = torch.where(mask, 0.0, large_negative).to(query.dtype)
    outputs = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=mask
    )
    return outputs.transpose(1, 2)
