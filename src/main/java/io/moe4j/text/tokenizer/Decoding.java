package io.moe4j.text.tokenizer;

/** How ids become text again: the {@code decoder} of a tokenizer.json, for whole sequences and for streams. */
sealed interface Decoding permits ByteDecoding, PieceDecoding {
    /** The text of {@code ids}; ids that name no token are skipped, special tokens too where asked. */
    String decode(int[] ids, boolean skipSpecialTokens);

    /** A fresh stream for one sequence. */
    Stream stream(boolean skipSpecialTokens);

    /** The state of one streamed sequence; what {@link #next} and {@link #flush} return adds up to {@link #decode}. */
    interface Stream {
        String next(int id);

        boolean hasPending();

        String flush();
    }
}
