package io.moe4j.text.tokenizer;

import java.util.Arrays;

/**
 * Decodes one sequence a token at a time, for streaming generation: each {@link #next} returns the text that the
 * new token completes, holding back the bytes of a character not yet whole (a token may end in the middle of a
 * UTF-8 sequence; emoji and CJK characters often span two or three tokens). What all calls return, joined and
 * followed by {@link #flush}, is exactly {@link Tokenizer#decode} of all the ids. Not thread-safe: one per sequence.
 */
public final class IncrementalDecoder {
    private final Tokenizer tokenizer;
    private final boolean skipSpecialTokens;
    private byte[] pending = new byte[16];
    private int pendingLength;
    private boolean started;

    IncrementalDecoder(Tokenizer tokenizer, boolean skipSpecialTokens) {
        this.tokenizer = tokenizer;
        this.skipSpecialTokens = skipSpecialTokens;
    }

    /** Feeds one id; returns the newly complete text (possibly empty). */
    public String next(int id) {
        byte[] bytes = tokenizer.bytesOf(id, skipSpecialTokens);
        if (bytes == null) {
            return "";
        }
        if (started) {
            append(tokenizer.separator());
        }
        started = true;
        append(bytes);
        int hold = Utf8.incompleteTail(pending, 0, pendingLength);
        int ready = pendingLength - hold;
        String text = Utf8.decodeLossy(pending, 0, ready);
        System.arraycopy(pending, ready, pending, 0, hold);
        pendingLength = hold;
        return text;
    }

    /** Whether bytes of an unfinished character are held back. */
    public boolean hasPending() {
        return pendingLength > 0;
    }

    /** Ends the sequence: the held-back bytes, if any, as replacement characters. */
    public String flush() {
        String text = Utf8.decodeLossy(pending, 0, pendingLength);
        pendingLength = 0;
        return text;
    }

    private void append(byte[] bytes) {
        if (pendingLength + bytes.length > pending.length) {
            pending = Arrays.copyOf(pending, Math.max(pending.length * 2, pendingLength + bytes.length));
        }
        System.arraycopy(bytes, 0, pending, pendingLength, bytes.length);
        pendingLength += bytes.length;
    }
}
