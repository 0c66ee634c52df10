package io.moe4j.generate.constraint;

/**
 * How many tokens at most the fixed pieces of a document take (property keys with their colon, enum and const
 * values), counted from each position in the piece. Any answer that the piece's first token lowers by one from
 * there on keeps the budget rule sound: bytes (a byte-level vocabulary has a token per byte), or the fewest tokens
 * of the vocabulary that spell the rest of the piece ({@link TokenTrie#suffixTokens}).
 */
@FunctionalInterface
interface PieceCost {

    /** Entry i: the tokens that spell piece[i..]; entry piece.length is 0. */
    int[] suffixes(byte[] piece);

    PieceCost BYTES = piece -> {
        int[] s = new int[piece.length + 1];
        for (int i = 0; i < piece.length; i++) {
            s[i] = piece.length - i;
        }
        return s;
    };
}
