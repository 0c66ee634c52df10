package io.moe4j.text.tokenizer;

import java.io.ByteArrayOutputStream;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.ByteBuffer;

/**
 * The decoder chain of SentencePiece-style BPE tokenizers (Mistral/Mixtral, Llama 2): {@code Replace} or
 * {@code Metaspace} steps on each token (the word-start mark '▁' back to a space), {@code ByteFallback} (runs of {@code <0xAB>} tokens read together
 * as UTF-8; a run that is not valid UTF-8 becomes one U+FFFD per byte, as in the reference), {@code Fuse} and a
 * {@code Strip} of the leading spaces the normalizer's prepended mark left.
 *
 * @param pieces  per id, the token after the Replace and Metaspace steps (null where no token has the id)
 * @param firstPieces null, or per id the token as the first of a text where that differs (a Metaspace decoder drops
 *                the marks of the first token)
 * @param byteOf  per id, the byte a {@code <0xAB>} token stands for when ByteFallback is on, else -1
 * @param strip   how many leading {@code stripChar}s the whole text loses at most
 * @param stripChar the character Strip removes
 * @param special per id, whether it is a special token
 */
record PieceDecoding(String[] pieces, String[] firstPieces, int[] byteOf, int strip, char stripChar,
                     boolean[] special)
        implements Decoding {

    private String pieceOf(int id, boolean skipSpecialTokens) {
        if (id < 0 || id >= pieces.length || pieces[id] == null) {
            return null;
        }
        return skipSpecialTokens && special[id] ? null : pieces[id];
    }

    /** A byte run as the reference's ByteFallback reads it: valid UTF-8, or one U+FFFD per byte. */
    private static String byteRun(ByteArrayOutputStream run) {
        byte[] bytes = run.toByteArray();
        run.reset();
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            return "\uFFFD".repeat(bytes.length);
        }
    }

    @Override
    public String decode(int[] ids, boolean skipSpecialTokens) {
        Stream stream = stream(skipSpecialTokens);
        StringBuilder out = new StringBuilder();
        for (int id : ids) {
            out.append(stream.next(id));
        }
        return out.append(stream.flush()).toString();
    }

    @Override
    public Stream stream(boolean skipSpecialTokens) {
        return new Stream() {
            private final ByteArrayOutputStream run = new ByteArrayOutputStream();
            private int stripLeft = strip;
            private boolean first = true;

            @Override
            public String next(int id) {
                String piece = pieceOf(id, skipSpecialTokens);
                if (piece == null) {
                    return "";
                }
                if (first) {
                    first = false;
                    if (firstPieces != null && firstPieces[id] != null) {
                        piece = firstPieces[id];
                    }
                }
                if (byteOf[id] >= 0) {
                    // A run is decided only when it ends: later bytes can still make it valid or not.
                    run.write(byteOf[id]);
                    return "";
                }
                String text = run.size() > 0 ? byteRun(run) + piece : piece;
                return stripped(text);
            }

            @Override
            public boolean hasPending() {
                return run.size() > 0;
            }

            @Override
            public String flush() {
                return run.size() > 0 ? stripped(byteRun(run)) : "";
            }

            /** Strip works on the fused text, so only on the first characters the stream gives. */
            private String stripped(String text) {
                int cut = 0;
                while (stripLeft > 0 && cut < text.length()) {
                    if (text.charAt(cut) == stripChar) {
                        cut++;
                        stripLeft--;
                    } else {
                        stripLeft = 0;
                    }
                }
                return text.substring(cut);
            }
        };
    }
}
