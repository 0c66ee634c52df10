package io.moe4j.generate.constraint;

import java.util.List;

/**
 * Inside a JSON string whose characters follow a {@link StringRule} ({@code pattern}, {@code format}, {@code
 * minLength}, {@code maxLength}). JSON's own checks are {@link StringFrame}'s ({@code chr} holds its state for the
 * character under way); each character, once whole (raw UTF-8 or an escape), steps the rule, and the closing quote
 * comes only where the rule accepts. A byte is refused when no character it could begin or continue leads anywhere
 * the rule can still accept, so a string under way can always be finished.
 *
 * @param state  the rule's state after the whole characters so far
 * @param chr    the JSON string state of the character under way ({@link StringFrame#NORMAL_STATE} between them)
 * @param value  the bits of the character under way read so far (UTF-8 payload or hex digits)
 * @param minCp  the least code point the UTF-8 sequence under way may encode (its length's first)
 * @param cost   bytes of the shortest way to the closing quote, that quote included
 */
record RuleStringFrame(StringRule rule, int state, StringFrame chr, int value, int minCp, int cost) implements Frame {

    static RuleStringFrame open(StringRule rule) {
        return between(rule, rule.start());
    }

    private static RuleStringFrame between(StringRule rule, int state) {
        return new RuleStringFrame(rule, state, StringFrame.NORMAL_STATE, 0, 0, rule.dist(state) + 1);
    }

    @Override
    public void step(int b, Stack self, JsonGrammar grammar, List<Stack> out) {
        StringFrame next = StringFrame.next(chr, b);
        if (next == null) {
            return;
        }
        if (next == StringFrame.CLOSED) {
            if (rule.accepts(state)) {
                out.add(self.pop());
            }
            return;
        }
        Frame after;
        if (chr.isPlain()) {
            after = switch (next.phase()) {
                case StringFrame.NORMAL -> whole(b);
                case StringFrame.ESCAPE -> partial(next, 0, 0);
                default -> {
                    int left = next.left();
                    int bits = b & (left == 1 ? 0x1F : left == 2 ? 0x0F : 0x07);
                    yield partial(next, bits, left == 1 ? 0x80 : left == 2 ? 0x800 : 0x10000);
                }
            };
        } else {
            after = switch (chr.phase()) {
                case StringFrame.ESCAPE -> next.phase() == StringFrame.NORMAL ? whole(StringFrame.unescaped(b))
                        : partial(next, 0, 0);
                case StringFrame.UNICODE -> {
                    int v = value * 16 + Character.digit(b, 16);
                    yield next.phase() == StringFrame.NORMAL ? whole(v) : partial(next, v, 0);
                }
                default -> {
                    int v = (value << 6) | (b & 0x3F);
                    yield next.phase() == StringFrame.NORMAL ? whole(v) : partial(next, v, minCp);
                }
            };
        }
        if (after != null) {
            out.add(self.replace(after));
        }
    }

    /** After a whole character: the rule's next state, or null where the rule refuses it. */
    private RuleStringFrame whole(int cp) {
        int next = rule.step(state, cp);
        return next == StringRule.DEAD ? null : between(rule, next);
    }

    /** Within a character: null when no character that these bytes begin goes on in the rule. */
    private RuleStringFrame partial(StringFrame next, int bits, int least) {
        long best = switch (next.phase()) {
            case StringFrame.ESCAPE -> {
                // one more byte for a short escape, five for \\uXXXX (a surrogate pair's halves never)
                long shortest = StringRule.NO_WAY;
                for (int c : new int[] {'"', '\\', '/', '\b', '\f', '\n', '\r', '\t'}) {
                    shortest = Math.min(shortest, 1L + rule.distAfter(state, c, c));
                }
                long unicode = 5L + Math.min(rule.distAfter(state, 0, 0xD7FF), rule.distAfter(state, 0xE000, 0xFFFF));
                yield Math.min(shortest, unicode);
            }
            case StringFrame.UNICODE -> {
                int k = next.left();
                int lo = bits << (4 * k);
                int hi = lo + (1 << (4 * k)) - 1;
                yield (long) k + rule.distAfter(state, lo, hi);
            }
            default -> {
                int k = next.left();
                int lo = Math.max(bits << (6 * k), least);
                int hi = Math.min((bits << (6 * k)) | ((1 << (6 * k)) - 1), SchemaRegex.MAX_CODE_POINT);
                yield (long) k + rule.distAfter(state, lo, hi);
            }
        };
        if (best >= StringRule.NO_WAY) {
            return null;
        }
        return new RuleStringFrame(rule, state, next, bits, least, (int) best + 1);
    }

}
