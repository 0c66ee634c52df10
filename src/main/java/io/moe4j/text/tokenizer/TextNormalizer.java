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

    /** Lowercasing, locale-independent as the reference's {@code str::to_lowercase}. */
    record Lowercase() implements TextNormalizer {
        @Override
        public String normalize(String text) {
            return text.toLowerCase(Locale.ROOT);
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
