package io.moe4j.generate;

import io.moe4j.MoeException;
import io.moe4j.generate.constraint.TokenVocabulary;
import io.moe4j.text.tokenizer.Tokenizer;

/**
 * A tokenizer's vocabulary as constrained decoding reads it: each token's bytes (byte-level BPE tokens decode to
 * fixed byte strings, possibly part of a UTF-8 character) and its special marks. The size is the model's logits
 * row, which may be larger than the tokenizer (padded embeddings): ids past the tokenizer add no bytes and are
 * never offered.
 */
public final class TokenizerVocabulary implements TokenVocabulary {
    private static final byte[] NONE = new byte[0];
    private final byte[][] bytes;
    private final boolean[] special;

    public TokenizerVocabulary(Tokenizer tokenizer, int logitsSize) {
        int n = Math.max(logitsSize, tokenizer.vocabSize());
        this.bytes = new byte[n][];
        this.special = new boolean[n];
        int known = 0;
        for (int id = 0; id < n; id++) {
            byte[] b = id < tokenizer.vocabSize() ? tokenizer.tokenBytes(id) : null;
            bytes[id] = b == null ? NONE : b;
            special[id] = tokenizer.isSpecial(id);
            known += b == null ? 0 : 1;
        }
        if (known == 0) {
            throw new MoeException(tokenizer + ": constrained decoding needs a byte-level tokenizer (tokens that"
                    + " decode to fixed bytes); this one's decoder does not");
        }
    }

    @Override
    public int size() {
        return bytes.length;
    }

    @Override
    public byte[] bytes(int id) {
        return bytes[id];
    }

    @Override
    public boolean isSpecial(int id) {
        return special[id];
    }
}
