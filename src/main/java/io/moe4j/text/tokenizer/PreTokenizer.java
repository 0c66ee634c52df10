package io.moe4j.text.tokenizer;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@code pre_tokenizer} of a tokenizer.json: cuts text into the words the BPE model sees. Each step takes the
 * pieces of the step before and cuts each one further; empty pieces are dropped, as in the reference.
 */
sealed interface PreTokenizer {
    /**
     * Appends the pieces of {@code piece} to {@code out}.
     *
     * @param atStart whether the piece begins the input text (no added token before it), which Metaspace's
     *                {@code prepend_scheme: "first"} asks about; the first piece cut from it inherits that
     */
    void split(String piece, boolean atStart, List<String> out);

    /** Whether the first piece {@link #split} makes of {@code piece} begins where {@code piece} begins. */
    default boolean keepsStart(String piece) {
        return true;
    }

    /** Steps applied one after the other ({@code Sequence}). */
    record Steps(List<PreTokenizer> steps) implements PreTokenizer {
        @Override
        public void split(String piece, boolean atStart, List<String> out) {
            List<String> pieces = List.of(piece);
            boolean firstAtStart = atStart;
            for (PreTokenizer step : steps) {
                List<String> next = new ArrayList<>(pieces.size() * 2);
                for (int i = 0; i < pieces.size(); i++) {
                    step.split(pieces.get(i), i == 0 && firstAtStart, next);
                }
                // The first piece still begins the text unless the step dropped what the first piece began with.
                firstAtStart = firstAtStart && !pieces.isEmpty() && step.keepsStart(pieces.get(0));
                pieces = next;
            }
            out.addAll(pieces);
        }

        @Override
        public boolean keepsStart(String piece) {
            // Conservative for nested sequences: only the outer sequence tracks its steps.
            List<String> pieces = List.of(piece);
            for (PreTokenizer step : steps) {
                if (pieces.isEmpty() || !step.keepsStart(pieces.get(0))) {
                    return false;
                }
                List<String> next = new ArrayList<>();
                for (String p : pieces) {
                    step.split(p, false, next);
                }
                pieces = next;
            }
            return true;
        }
    }

    /**
     * {@code Metaspace}: spaces become the word-start mark ('▁'), a mark is put before the text (always, only before
     * the start of the input, or never), and the text is cut before each mark.
     */
    record Metaspace(char replacement, String prependScheme, boolean split) implements PreTokenizer {
        @Override
        public void split(String piece, boolean atStart, List<String> out) {
            String text = piece.replace(' ', replacement);
            boolean prepend = switch (prependScheme) {
                case "always" -> true;
                case "first" -> atStart;
                default -> false;
            };
            if (prepend && (text.isEmpty() || text.charAt(0) != replacement)) {
                text = replacement + text;
            }
            if (!split) {
                if (!text.isEmpty()) {
                    out.add(text);
                }
                return;
            }
            // MergedWithNext on each mark: every word starts with its mark.
            int start = 0;
            for (int i = 1; i < text.length(); i++) {
                if (text.charAt(i) == replacement) {
                    out.add(text.substring(start, i));
                    start = i;
                }
            }
            if (start < text.length()) {
                out.add(text.substring(start));
            }
        }
    }

    /** {@code Split}: cuts at the matches of a pattern and keeps or joins them per {@link SplitBehavior}. */
    record RegexSplit(Pattern pattern, SplitBehavior behavior, boolean invert) implements PreTokenizer {
        @Override
        public boolean keepsStart(String piece) {
            if (behavior != SplitBehavior.REMOVED || piece.isEmpty()) {
                return true;
            }
            // Removed drops the matches (the gaps with invert): is the text at 0 one of them?
            Matcher m = pattern.matcher(piece);
            boolean matchAtZero = false;
            while (m.find()) {
                if (m.end() > m.start()) {
                    matchAtZero = m.start() == 0;
                    break;
                }
            }
            return invert == matchAtZero;
        }

        @Override
        public void split(String piece, boolean atStart, List<String> out) {
            Matcher m = pattern.matcher(piece);
            if (behavior == SplitBehavior.ISOLATED) {
                // The common case (every real tokenizer's regex): matches and the gaps between them, in order.
                int prev = 0;
                while (m.find()) {
                    if (m.start() > prev) {
                        out.add(piece.substring(prev, m.start()));
                    }
                    if (m.end() > m.start()) {
                        out.add(piece.substring(m.start(), m.end()));
                    }
                    prev = m.end();
                }
                if (prev < piece.length()) {
                    out.add(piece.substring(prev));
                }
                return;
            }
            // Spans covering the piece: [start, end, isMatch] in order.
            List<int[]> spans = new ArrayList<>();
            int prev = 0;
            while (m.find()) {
                if (m.start() > prev) {
                    spans.add(new int[] {prev, m.start(), invert ? 1 : 0});
                }
                spans.add(new int[] {m.start(), m.end(), invert ? 0 : 1});
                prev = m.end();
            }
            if (prev < piece.length()) {
                spans.add(new int[] {prev, piece.length(), invert ? 1 : 0});
            }
            for (int[] span : arrange(spans)) {
                if (span[1] > span[0]) {
                    out.add(piece.substring(span[0], span[1]));
                }
            }
        }

        private List<int[]> arrange(List<int[]> spans) {
            List<int[]> acc = new ArrayList<>(spans.size());
            switch (behavior) {
                case ISOLATED -> acc.addAll(spans);
                case REMOVED -> {
                    for (int[] s : spans) {
                        if (s[2] == 0) {
                            acc.add(s);
                        }
                    }
                }
                case CONTIGUOUS -> {
                    boolean previousMatch = false;
                    for (int[] s : spans) {
                        boolean isMatch = s[2] == 1;
                        if (isMatch == previousMatch && !acc.isEmpty()) {
                            acc.getLast()[1] = s[1];
                        } else {
                            acc.add(s.clone());
                        }
                        previousMatch = isMatch;
                    }
                }
                case MERGED_WITH_PREVIOUS -> {
                    boolean previousMatch = false;
                    for (int[] s : spans) {
                        boolean isMatch = s[2] == 1;
                        if (isMatch && !previousMatch && !acc.isEmpty()) {
                            acc.getLast()[1] = s[1];
                        } else {
                            acc.add(s.clone());
                        }
                        previousMatch = isMatch;
                    }
                }
                case MERGED_WITH_NEXT -> {
                    boolean previousMatch = false;
                    for (int[] s : spans.reversed()) {
                        boolean isMatch = s[2] == 1;
                        if (isMatch && !previousMatch && !acc.isEmpty()) {
                            acc.getLast()[0] = s[0];
                        } else {
                            acc.add(s.clone());
                        }
                        previousMatch = isMatch;
                    }
                    return acc.reversed();
                }
            }
            return acc;
        }
    }

    /**
     * {@code ByteLevel}: optionally a leading space and the GPT-2 split, then every piece rewritten into byte-level
     * symbols (its UTF-8 bytes through {@link ByteLevel}).
     */
    record ByteLevelStep(boolean addPrefixSpace, boolean useRegex) implements PreTokenizer {
        /** The GPT-2 pattern the reference applies when {@code use_regex} is set. */
        static final Pattern GPT2 = OnigPatterns.compile(
                "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+");

        @Override
        public void split(String piece, boolean atStart, List<String> out) {
            if (addPrefixSpace && !piece.startsWith(" ")) {
                piece = " " + piece;
            }
            if (!useRegex) {
                out.add(ByteLevel.encode(piece));
                return;
            }
            List<String> words = new ArrayList<>();
            new RegexSplit(GPT2, SplitBehavior.ISOLATED, false).split(piece, atStart, words);
            for (String word : words) {
                out.add(ByteLevel.encode(word));
            }
        }
    }
}
