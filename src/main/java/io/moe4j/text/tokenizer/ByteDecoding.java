package io.moe4j.text.tokenizer;

import java.io.ByteArrayOutputStream;
import java.util.Arrays;

/**
 * Decoding by bytes: each token stands for a fixed byte string (the ByteLevel decoder's bytes, or a token's own
 * UTF-8 text with a separator between tokens when a tokenizer.json has no decoder), and the concatenation is read as
 * UTF-8 with ill-formed parts replaced.
 *
 * @param bytes     per id, what the token decodes to (null where no token has the id)
 * @param separator put between tokens (empty for ByteLevel, a space without a decoder)
 * @param special   per id, whether it is a special token
 */
record ByteDecoding(byte[][] bytes, byte[] separator, boolean[] special) implements Decoding {
    private byte[] bytesOf(int id, boolean skipSpecialTokens) {
        if (id < 0 || id >= bytes.length || bytes[id] == null) {
            return null;
        }
        return skipSpecialTokens && special[id] ? null : bytes[id];
    }

    @Override
    public String decode(int[] ids, boolean skipSpecialTokens) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(ids.length * 4);
        boolean first = true;
        for (int id : ids) {
            byte[] b = bytesOf(id, skipSpecialTokens);
            if (b == null) {
                continue;
            }
            if (!first) {
                out.writeBytes(separator);
            }
            out.writeBytes(b);
            first = false;
        }
        byte[] all = out.toByteArray();
        return Utf8.decodeLossy(all, 0, all.length);
    }

    @Override
    public Stream stream(boolean skipSpecialTokens) {
        return new Stream() {
            private byte[] pending = new byte[16];
            private int pendingLength;
            private boolean started;

            @Override
            public String next(int id) {
                byte[] b = bytesOf(id, skipSpecialTokens);
                if (b == null) {
                    return "";
                }
                if (started) {
                    append(separator);
                }
                started = true;
                append(b);
                // Hold back a character still missing bytes; everything before it decodes now as it will in decode.
                int hold = Utf8.incompleteTail(pending, 0, pendingLength);
                int ready = pendingLength - hold;
                String text = Utf8.decodeLossy(pending, 0, ready);
                System.arraycopy(pending, ready, pending, 0, hold);
                pendingLength = hold;
                return text;
            }

            @Override
            public boolean hasPending() {
                return pendingLength > 0;
            }

            @Override
            public String flush() {
                String text = Utf8.decodeLossy(pending, 0, pendingLength);
                pendingLength = 0;
                return text;
            }

            private void append(byte[] more) {
                if (pendingLength + more.length > pending.length) {
                    pending = Arrays.copyOf(pending, Math.max(pending.length * 2, pendingLength + more.length));
                }
                System.arraycopy(more, 0, pending, pendingLength, more.length);
                pendingLength += more.length;
            }
        };
    }
}
