package io.moe4j.generate.constraint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moe4j.MoeException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A whole reply held to a regular expression or a list of choices, on the real gpt-oss vocabulary (200k byte-level
 * tokens, many of them pieces of UTF-8 characters). The reference is {@link java.util.regex.Pattern}, a regex engine
 * this project did not write: every sampled text must match it as a whole, and each mask must allow exactly the
 * tokens after which Java's engine still sees a match or a possible one.
 */
class TextConstraintTest {
    /** Expressions on which ECMA-262 (the grammar's dialect) and java.util.regex agree. */
    static final String[] PATTERNS = {
        "\\d{3}-\\d{4}",
        "(yes|no|maybe)",
        "[A-Z][a-z]{2,8}( [A-Z][a-z]{2,8})?",
        "[a-z]+@[a-z]+\\.(com|org)",
        "[+-]?[0-9]+(\\.[0-9]{1,3})?",
        "(日本|中国)語[αβγ]{2,4}é?",
        "^\\w+ \\w+$",
        "[\\s\\S]{3,12}!",
    };
    static final int MAX_TOKENS = 48;

    static ByteLevelVocabulary vocabulary;
    static TokenTrie trie;
    static int eos;

    @BeforeAll
    static void load() {
        vocabulary = ByteLevelVocabulary.cached("gpt-oss");
        trie = ByteLevelVocabulary.cachedTrie("gpt-oss");
        eos = vocabulary.addedToken("<|return|>");
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 2, 3, 4, 5, 6, 7})
    void sampledTextsMatchTheWholeExpression(int index) {
        TextGrammar grammar = TextGrammar.regex(PATTERNS[index], "guided_regex");
        Pattern reference = java(PATTERNS[index]);
        Set<String> texts = new HashSet<>();
        for (long seed = 1; seed <= 12; seed++) {
            String text = ConstrainedSamplingTest.generate(grammar.constrain(trie, vocabulary, eos), vocabulary, eos,
                    seed * 100 + index, MAX_TOKENS);
            assertThat(reference.matcher(text).matches()).as(text).isTrue();
            texts.add(text);
        }
        assertThat(texts).as("different seeds, different texts").hasSizeGreaterThan(1);
    }

    @Test
    void choicesGiveOneOfThemWholeAndMoreThanOneOverSeeds() {
        List<String> choices = List.of("yes", "yes!", "no", "Perhaps, später", "🙂");
        TextGrammar grammar = TextGrammar.choice(choices, "guided_choice");
        Set<String> seen = new HashSet<>();
        for (long seed = 1; seed <= 20; seed++) {
            String text = ConstrainedSamplingTest.generate(grammar.constrain(trie, vocabulary, eos), vocabulary, eos,
                    seed, MAX_TOKENS);
            assertThat(choices).contains(text);
            seen.add(text);
        }
        assertThat(seen).hasSizeGreaterThan(2);
    }

    /**
     * After a few prefixes of each expression, the mask against Java's engine over every token that is whole UTF-8:
     * allowed exactly when prefix + token matches or could still match ({@link Matcher#hitEnd}).
     */
    @ParameterizedTest
    @ValueSource(ints = {0, 2, 3, 4, 5, 6})
    void masksAllowExactlyWhatJavaRegexStillMatches(int index) {
        Pattern reference = java(PATTERNS[index]);
        TextGrammar grammar = TextGrammar.regex(PATTERNS[index], "guided_regex");
        List<String> whole = wholeTokens();
        // prefixes: the empty text and the first few characters of a sampled match
        String sample = ConstrainedSamplingTest.generate(grammar.constrain(trie, vocabulary, eos), vocabulary, eos,
                7, MAX_TOKENS);
        boolean[] mask = new boolean[vocabulary.size()];
        int[] cps = sample.codePoints().toArray();
        for (int cut : new int[] {0, 1, Math.min(3, cps.length), cps.length}) {
            String prefix = new String(cps, 0, cut);
            AnswerConstraint c = grammar.constrain(trie, vocabulary, eos);
            for (int id : tokensOf(prefix)) {
                c.accept(id);
            }
            c.fillAllowed(mask, 1 << 20);
            int allowed = 0;
            for (int id = 0; id < whole.size(); id++) {
                String token = whole.get(id);
                if (token == null) {
                    continue;
                }
                Matcher m = reference.matcher(prefix + token);
                boolean viable = m.matches() || m.hitEnd();
                assertThat(mask[id]).as("prefix '%s' + token %d '%s'", prefix, id, token).isEqualTo(viable);
                allowed += viable ? 1 : 0;
            }
            assertThat(mask[eos]).as("end after '%s'", prefix).isEqualTo(reference.matcher(prefix).matches());
            assertThat(allowed + (mask[eos] ? 1 : 0)).as("something may follow '%s'", prefix).isPositive();
        }
    }

    @Test
    void charactersSplitAcrossTokensAreTakenByteByByte() {
        // é is C3 A9: the lone byte tokens C3 then A9 spell it; C3 then A8 (è) does not fit "é+"
        AnswerConstraint c = TextGrammar.regex("é+", "guided_regex").constrain(trie, vocabulary, eos);
        int c3 = byteToken(0xC3);
        int a9 = byteToken(0xA9);
        int a8 = byteToken(0xA8);
        boolean[] mask = new boolean[vocabulary.size()];
        c.fillAllowed(mask, 10);
        assertThat(mask[c3]).isTrue();
        assertThat(mask[byteToken(0xC4)]).isFalse();
        assertThat(mask[eos]).isFalse();
        c.accept(c3);
        c.fillAllowed(mask, 9);
        assertThat(mask[a9]).isTrue();
        assertThat(mask[a8]).isFalse();
        assertThat(mask[eos]).as("half a character is no text").isFalse();
        assertThat(c.minTokens()).isEqualTo(2); // the last byte and the end
        c.accept(a9);
        assertThat(c.isComplete()).isTrue();
        assertThatThrownBy(() -> {
            AnswerConstraint d = TextGrammar.regex("é+", "guided_regex").constrain(trie, vocabulary, eos);
            d.accept(c3);
            d.accept(a8);
        }).isInstanceOf(MoeException.class).hasMessageContaining("does not continue");
    }

    @Test
    void theBudgetEndsEveryTextAndSaysWhenItCutOne() {
        TextGrammar grammar = TextGrammar.regex("[a-z]+\\.", "guided_regex");
        AnswerConstraint first = grammar.constrain(trie, vocabulary, eos);
        assertThat(first.minTokens()).isEqualTo(3); // a cyclic expression's costs in bytes: a letter, the stop, the end
        for (long seed = 1; seed <= 8; seed++) {
            AnswerConstraint c = grammar.constrain(trie, vocabulary, eos);
            String text = ConstrainedSamplingTest.generate(c, vocabulary, eos, seed, c.minTokens() + 1);
            assertThat(text).matches("[a-z]+\\.");
            assertThat(c.cutByBudget()).as(text).isTrue();
        }
        AnswerConstraint fixed = TextGrammar.choice(List.of("ok"), "guided_choice").constrain(trie, vocabulary, eos);
        ConstrainedSamplingTest.generate(fixed, vocabulary, eos, 3, MAX_TOKENS);
        assertThat(fixed.cutByBudget()).isFalse();
        assertThatThrownBy(() -> grammar.constrain(trie, vocabulary, eos).fillAllowed(new boolean[vocabulary.size()],
                2)).isInstanceOf(MoeException.class).hasMessageContaining("needs at least 3 more tokens");
    }

    /**
     * An expression without cycles has its budget in tokens, each state's fewest to a match: a choice needs as many
     * tokens as its cheapest spelling in this vocabulary (a search over every token, here), not its bytes, and a
     * reply given exactly that many ends in it.
     */
    @Test
    void choicesCostTheirFewestTokensNotTheirBytes() {
        List<String> choices = List.of("The quick brown fox jumps over the lazy dog", "日本語でお願いします",
                "🙂 déjà vu 🙂");
        for (String choice : choices) {
            int fewest = fewestTokens(choice.getBytes(StandardCharsets.UTF_8));
            assertThat(fewest).isLessThan(choice.getBytes(StandardCharsets.UTF_8).length);
            AnswerConstraint c = TextGrammar.choice(List.of(choice), "guided_choice").constrain(trie, vocabulary, eos);
            assertThat(c.minTokens()).as(choice).isEqualTo(fewest + 1);
            for (long seed = 1; seed <= 3; seed++) {
                AnswerConstraint tight = TextGrammar.choice(List.of(choice), "guided_choice")
                        .constrain(trie, vocabulary, eos);
                assertThat(ConstrainedSamplingTest.generate(tight, vocabulary, eos, seed, fewest + 1))
                        .isEqualTo(choice);
            }
        }
        AnswerConstraint both = TextGrammar.choice(choices, "guided_choice").constrain(trie, vocabulary, eos);
        int least = choices.stream().mapToInt(x -> fewestTokens(x.getBytes(StandardCharsets.UTF_8))).min()
                .orElseThrow();
        assertThat(both.minTokens()).isEqualTo(least + 1);
    }

    /** Long lists share their prefixes (a state a distinct prefix), and choices inside choices nest without limit. */
    @Test
    void largeAndNestedChoiceListsCompile() {
        List<String> many = new ArrayList<>();
        for (int i = 0; i < TextGrammar.MAX_CHOICES; i++) {
            many.add("option-number-%05d".formatted(i));
        }
        AnswerConstraint c = TextGrammar.choice(many, "guided_choice").constrain(trie, vocabulary, eos);
        String text = ConstrainedSamplingTest.generate(c, vocabulary, eos, 5, MAX_TOKENS);
        assertThat(many).contains(text);
        List<String> nested = new ArrayList<>();
        for (int n = 1; n <= TextGrammar.MAX_CHOICE_LENGTH; n++) {
            nested.add("a".repeat(n));
        }
        AnswerConstraint d = TextGrammar.choice(nested, "guided_choice").constrain(trie, vocabulary, eos);
        assertThat(nested).contains(ConstrainedSamplingTest.generate(d, vocabulary, eos, 6, MAX_TOKENS));
    }

    /** A text that matches at every point may end by its length: the last token need not be the end token. */
    @Test
    void aTextCompleteAtEveryPointMayFillItsBudget() {
        for (String pattern : List.of("[a-z]*", "\\d+", "[^\\n]{0,300}")) {
            AnswerConstraint c = TextGrammar.regex(pattern, "guided_regex").constrain(trie, vocabulary, eos);
            boolean[] mask = new boolean[vocabulary.size()];
            c.accept(tokensOf(pattern.equals("[a-z]*") ? "a" : "7")[0]);
            c.fillAllowed(mask, 1);
            int allowed = 0;
            for (int id = 0; id < mask.length; id++) {
                allowed += mask[id] && id != eos ? 1 : 0;
            }
            assertThat(mask[eos]).isTrue();
            assertThat(allowed).as("%s: tokens that keep the text a match, in the last slot", pattern).isPositive();
        }
    }

    /** The fewest vocabulary tokens whose bytes, one after another, are exactly {@code text}. */
    private static int fewestTokens(byte[] text) {
        int[] best = new int[text.length + 1];
        java.util.Arrays.fill(best, Integer.MAX_VALUE);
        best[text.length] = 0;
        for (int i = text.length - 1; i >= 0; i--) {
            for (int id = 0; id < vocabulary.size(); id++) {
                byte[] t = vocabulary.isSpecial(id) ? null : vocabulary.bytes(id);
                if (t != null && t.length > 0 && t.length <= text.length - i && best[i + t.length] != Integer.MAX_VALUE
                        && java.util.Arrays.equals(t, 0, t.length, text, i, i + t.length)) {
                    best[i] = Math.min(best[i], 1 + best[i + t.length]);
                }
            }
        }
        return best[0];
    }

    /**
     * Masks read from the per-class cache against a walk of the trie from the sequence's own state, at a roomy and at
     * tight budgets, along sampled texts of counted repeats (whose states share classes) and an alternation.
     */
    @ParameterizedTest
    @ValueSource(strings = {"[^\\n]{0,300}", "[a-z ]{10,200}\\.", "(ab|cd|é){1,100}!", "[\\s\\S]*"})
    void cachedMasksEqualAWalkFromTheStateItself(String pattern) {
        TextGrammar grammar = TextGrammar.regex(pattern, "guided_regex");
        TextConstraint c = (TextConstraint) grammar.constrain(trie, vocabulary, eos);
        java.util.SplittableRandom random = new java.util.SplittableRandom(pattern.length());
        boolean[] mask = new boolean[vocabulary.size()];
        boolean[] walked = new boolean[vocabulary.size()];
        for (int step = 0; step < 30; step++) {
            for (int budget : new int[] {4096, c.minTokens() + 1, c.minTokens() + 4}) {
                c.fillAllowed(mask, budget);
                java.util.Arrays.fill(walked, false);
                trie.markBytes(c, c.state(), budget - 2, walked, new boolean[1]);
                walked[eos] = c.isComplete();
                assertThat(mask).as("%s, step %d, budget %d", pattern, step, budget).isEqualTo(walked);
            }
            c.fillAllowed(mask, 4096);
            List<Integer> allowed = new ArrayList<>();
            for (int id = 0; id < mask.length; id++) {
                if (mask[id] && id != eos) {
                    allowed.add(id);
                }
            }
            if (allowed.isEmpty()) {
                break;
            }
            c.accept(allowed.get(random.nextInt(allowed.size())));
        }
    }

    @Test
    void refusalsNameTheFieldAndWhatIsWrong() {
        assertThatThrownBy(() -> TextGrammar.regex("a(?=b)", "guided_regex")).isInstanceOf(MoeException.class)
                .hasMessageContaining("'guided_regex'").hasMessageContaining("lookaround");
        assertThatThrownBy(() -> TextGrammar.regex("(ab", "structured_outputs.regex"))
                .hasMessageContaining("'structured_outputs.regex'").hasMessageContaining("not a valid");
        assertThatThrownBy(() -> TextGrammar.regex("[^\\s\\S]", "guided_regex"))
                .hasMessageContaining("'guided_regex' matches no text at all");
        assertThatThrownBy(() -> TextGrammar.choice(List.of(), "guided_choice"))
                .hasMessageContaining("'guided_choice' must list 1 to");
        assertThatThrownBy(() -> TextGrammar.choice(List.of("a", "b\uD800"), "guided_choice"))
                .hasMessageContaining("'guided_choice[1]'").hasMessageContaining("surrogate");
        assertThatThrownBy(() -> TextGrammar.regex("(".repeat(5000) + "a" + ")".repeat(5000), "guided_regex"))
                .hasMessageContaining("'guided_regex'").hasMessageContaining("nested more than 200 deep")
                .hasMessageContaining("…");
        assertThatThrownBy(() -> TextGrammar.choice(List.of("x".repeat(1025)), "guided_choice"))
                .hasMessageContaining("'guided_choice[0]' has 1025 characters");
        assertThatThrownBy(() -> TextGrammar.regex("[ab]*a[ab]{20}", "guided_regex"))
                .hasMessageContaining("'guided_regex'").hasMessageContaining("automaton states");
    }

    /** The expression in Java's dialect: there {@code $} also matches before a last line break, ECMA's does not. */
    private static Pattern java(String ecma) {
        return Pattern.compile(ecma.endsWith("$") ? ecma.substring(0, ecma.length() - 1) + "\\z" : ecma);
    }

    /** Per token id its text where its bytes are whole UTF-8 characters (null for special tokens and pieces). */
    private static List<String> wholeTokens() {
        List<String> out = new ArrayList<>(vocabulary.size());
        var decoder = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        for (int id = 0; id < vocabulary.size(); id++) {
            byte[] b = vocabulary.isSpecial(id) ? new byte[0] : vocabulary.bytes(id);
            String text = null;
            if (b.length > 0) {
                try {
                    text = decoder.decode(java.nio.ByteBuffer.wrap(b)).toString();
                } catch (CharacterCodingException e) {
                    text = null;
                }
            }
            out.add(text);
        }
        return out;
    }

    /** The tokens that spell {@code text} one byte a token. */
    private static int[] tokensOf(String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        int[] ids = new int[b.length];
        for (int i = 0; i < b.length; i++) {
            ids[i] = byteToken(b[i] & 0xFF);
        }
        return ids;
    }

    private static int byteToken(int b) {
        for (int id = 0; id < vocabulary.size(); id++) {
            byte[] t = vocabulary.isSpecial(id) ? null : vocabulary.bytes(id);
            if (t != null && t.length == 1 && (t[0] & 0xFF) == b) {
                return id;
            }
        }
        throw new AssertionError("no token for byte " + b);
    }
}
