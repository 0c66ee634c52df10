package io.moe4j.generate.constraint;

/**
 * What a constraint needs of a tokenizer: each token's bytes as it adds them to the text (byte-level BPE tokens
 * decode to byte strings, possibly part of a UTF-8 character) and which tokens are special (never offered as text).
 */
public interface TokenVocabulary {

    /** Token ids are 0..size()-1. */
    int size();

    /** The bytes this token adds to the text; empty for an id the tokenizer does not use. */
    byte[] bytes(int id);

    /** Control tokens (end of sequence, chat markers): a constraint never offers them as text. */
    boolean isSpecial(int id);
}
