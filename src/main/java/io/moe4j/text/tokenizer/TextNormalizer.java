package io.moe4j.text.tokenizer;

import java.text.Normalizer;
import java.util.List;
import java.util.Locale;

/** The {@code normalizer} of a tokenizer.json: applied to the text between added tokens before pre-tokenization. */
sealed interface TextNormalizer {
    String normalize(String text);

    /** No normalization (a null normalizer or an empty sequence). */
    TextNormalizer IDENTITY = new Steps(List.of());

    /** One of the Unicode normalization forms (NFC, NFD, NFKC, NFKD). */
    record UnicodeForm(Normalizer.Form form) implements TextNormalizer {
        @Override
        public String normalize(String text) {
            return Normalizer.normalize(text, form);
        }
    }

    /**
     * Lowercasing character by character, as the reference's {@code char::to_lowercase}: the full mapping of each
     * character on its own (U+0130 becomes "i\u0307"), so without the context rule that makes a word-final sigma
     * 'ς' (which {@link String#toLowerCase} applies to whole strings).
     */
    record Lowercase() implements TextNormalizer {
        @Override
        public String normalize(String text) {
            StringBuilder out = new StringBuilder(text.length());
            for (int i = 0; i < text.length(); ) {
                int cp = text.codePointAt(i);
                int n = Character.charCount(cp);
                if (cp < 0x80) {
                    out.append((char) Character.toLowerCase(cp));
                } else {
                    out.append(text.substring(i, i + n).toLowerCase(Locale.ROOT));
                }
                i += n;
            }
            return out.toString();
        }
    }

    /** A prefix put before any non-empty text (SentencePiece's word-start mark '▁'). */
    record Prepend(String prefix) implements TextNormalizer {
        @Override
        public String normalize(String text) {
            return text.isEmpty() ? text : prefix + text;
        }
    }

    /** Every match of a pattern replaced by fixed content (e.g. each space by '▁'). */
    record Replace(java.util.regex.Pattern pattern, String content) implements TextNormalizer {
        @Override
        public String normalize(String text) {
            return pattern.matcher(text).replaceAll(java.util.regex.Matcher.quoteReplacement(content));
        }
    }

    /** Normalizers applied one after the other. */
    record Steps(List<TextNormalizer> steps) implements TextNormalizer {
        @Override
        public String normalize(String text) {
            for (TextNormalizer step : steps) {
                text = step.normalize(text);
            }
            return text;
        }
    }
}
