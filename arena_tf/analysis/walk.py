"""Walk a trained `Encoder` block by block, to see what each attention layer receives.

`Encoder.call` only returns the pooled features; the analysis needs the input of every block's
attention. `block_inputs` repeats the encoder's inference path (embeddings, CLS, positions, then
the blocks in order) and yields every block with its input; the block's attention reads that input
after the block's `attention_norm`:

    for block, x, mask in block_inputs(encoder, tokens):
        weights = implied_weights(block.attention, block.attention_norm(x), mask)

Positions are encoder positions: with CLS pooling position 0 is the CLS token and token t of the
input is position t + 1.
"""

import numpy as np


def block_inputs(encoder, tokens):
    """Yield (block, input x [batch, positions, emb_dim], mask) for every block in order, as the
    encoder computes them at inference."""
    x, mask = encoder.embed(tokens)
    for block in encoder.blocks:
        yield block, x, mask
        x = block(x, mask=mask, training=False)


def token_offset(encoder):
    """Encoder position of the first input token: 1 after a CLS token, else 0."""
    return int(encoder.config.pooling == "cls")


def real_tokens(tokens, padding_id):
    """bool NumPy mask of the tokens that are not padding (all of them when padding_id is None)."""
    tokens = np.asarray(tokens)
    return np.ones(tokens.shape, bool) if padding_id is None else tokens != padding_id
