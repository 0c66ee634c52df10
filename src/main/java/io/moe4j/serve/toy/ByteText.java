package io.moe4j.serve.toy;

import io.moe4j.serve.ChatMessage;
import io.moe4j.serve.ChatPrompt;
import io.moe4j.serve.TextCodec;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * A byte-level text side for testing the server without a real tokenizer: ids 0-255 are the bytes of UTF-8 text,
 * then three specials. A chat renders as {@code <start>role\ncontent<end>} per message, the tool definitions (when
 * sent) as a leading {@code tools} message, and ends with {@code <start>assistant\n}.
 */
public final class ByteText implements TextCodec {
    public static final int EOS = 256;
    public static final int START = 257;
    public static final int END = 258;
    public static final int VOCAB_SIZE = 259;

    @Override
    public int[] renderChat(ChatPrompt prompt) {
        IntBuilder out = new IntBuilder();
        if (prompt.tools() != null) {
            message(out, "tools", prompt.tools().toString());
        }
        for (ChatMessage m : prompt.messages()) {
            message(out, m.role(), m.content() == null ? "" : m.content());
        }
        out.add(START);
        out.addBytes("assistant\n");
        return out.toArray();
    }

    private static void message(IntBuilder out, String role, String content) {
        out.add(START);
        out.addBytes(role + "\n" + content);
        out.add(END);
    }

    @Override
    public int[] encode(String prompt) {
        IntBuilder out = new IntBuilder();
        out.addBytes(prompt);
        return out.toArray();
    }

    @Override
    public int[] eosIds() {
        return new int[] {EOS};
    }

    @Override
    public byte[] tokenBytes(int id) {
        return id >= 0 && id < 256 ? new byte[] {(byte) id} : new byte[0];
    }

    @Override
    public Detokenizer detokenizer() {
        return new Utf8Detokenizer();
    }

    /** Decodes bytes as they come; a character split over several ids appears with its last byte. */
    private static final class Utf8Detokenizer implements Detokenizer {
        private final CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPLACE)
                .onUnmappableCharacter(CodingErrorAction.REPLACE);
        private final ByteBuffer pending = ByteBuffer.allocate(8);
        private final CharBuffer chars = CharBuffer.allocate(16);

        @Override
        public String accept(int id) {
            if (id < 0 || id > 255) {
                return "";
            }
            pending.put((byte) id);
            return drain(false);
        }

        @Override
        public String flush() {
            return drain(true);
        }

        private String drain(boolean end) {
            pending.flip();
            chars.clear();
            decoder.decode(pending, chars, end);
            if (end) {
                decoder.flush(chars);
                decoder.reset();
            }
            pending.compact();
            chars.flip();
            return chars.toString();
        }
    }

    private static final class IntBuilder {
        private int[] data = new int[64];
        private int size;

        void add(int v) {
            if (size == data.length) {
                data = java.util.Arrays.copyOf(data, size * 2);
            }
            data[size++] = v;
        }

        void addBytes(String s) {
            for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
                add(b & 0xff);
            }
        }

        int[] toArray() {
            return java.util.Arrays.copyOf(data, size);
        }
    }
}
