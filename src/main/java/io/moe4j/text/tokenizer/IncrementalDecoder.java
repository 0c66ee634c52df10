package io.moe4j.text.tokenizer;

/**
 * Decodes one sequence a token at a time, for streaming generation: each {@link #next} returns the text that the
 * new token completes, holding back what later tokens can still change (the bytes of a character not yet whole: a
 * token may end in the middle of a UTF-8 sequence, and emoji or CJK characters often span several tokens). What all
 * calls return, joined and followed by {@link #flush}, is exactly {@link Tokenizer#decode} of all the ids.
 * Not thread-safe: one per sequence.
 */
public final class IncrementalDecoder {
    private final Decoding.Stream stream;

    IncrementalDecoder(Decoding.Stream stream) {
        this.stream = stream;
    }

    /** Feeds one id; returns the newly complete text (possibly empty). */
    public String next(int id) {
        return stream.next(id);
    }

    /** Whether text is held back, waiting for the tokens that complete it. */
    public boolean hasPending() {
        return stream.hasPending();
    }

    /** Ends the sequence: what is held back, decoded as it stands (an unfinished character as U+FFFD). */
    public String flush() {
        return stream.flush();
    }
}
