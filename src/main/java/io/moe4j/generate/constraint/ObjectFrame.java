package io.moe4j.generate.constraint;

import io.moe4j.generate.constraint.ValueSchema.ObjectSchema;
import io.moe4j.generate.constraint.ValueSchema.Property;
import java.util.List;

/**
 * Inside a JSON object. Listed properties are matched as literal keys (each at most once, in any order, required
 * ones before the closing brace); an object with free keys takes any string key. A comma is only offered while a
 * further entry can follow, so no state is a dead end.
 *
 * @param phase  where in the entry grammar the text stands (constants below)
 * @param seen   bit i set: listed property i has been written (listed properties are limited to 64)
 * @param ws     whitespace bytes in the current gap, bounded by the grammar
 * @param prop   the property of the entry in progress (-1: a free key)
 * @param keyPos bytes of the key text matched so far (KEY)
 * @param alive  the listed properties whose key text still matches (KEY)
 */
record ObjectFrame(ObjectSchema schema, int phase, long seen, int ws, int prop, int keyPos, long alive, int cost)
        implements Frame {
    static final int OPEN = 0;
    static final int KEY = 1;
    static final int FREE_KEY = 2;
    static final int COLON = 3;
    static final int BEFORE_VALUE = 4;
    static final int IN_VALUE = 5;
    static final int AFTER_VALUE = 6;
    static final int COMMA = 7;

    static ObjectFrame open(ObjectSchema schema) {
        return make(schema, OPEN, 0, 0, -1, 0, 0);
    }

    private static ObjectFrame make(ObjectSchema s, int phase, long seen, int ws, int prop, int keyPos, long alive) {
        return new ObjectFrame(s, phase, seen, ws, prop, keyPos, alive, cost(s, phase, seen, prop, keyPos, alive));
    }

    private ObjectFrame with(int phase, long seen, int ws, int prop, int keyPos, long alive) {
        return make(schema, phase, seen, ws, prop, keyPos, alive);
    }

    @Override
    public void step(int b, Stack self, JsonGrammar grammar, List<Stack> out) {
        if (Frame.isWhitespace(b) && phase != KEY) {
            if (ws < grammar.maxWhitespace()) {
                out.add(self.replace(with(phase, seen, ws + 1, prop, keyPos, alive)));
            }
            return;
        }
        switch (phase) {
            case OPEN, COMMA -> {
                if (b == '}' && phase == OPEN && missingRequired(seen) == 0) {
                    out.add(self.pop());
                } else if (b == '"') {
                    startKey(self, out);
                }
            }
            case KEY -> matchKey(b, self, out);
            case COLON -> {
                if (b == ':') {
                    out.add(self.replace(with(BEFORE_VALUE, seen, 0, prop, 0, 0)));
                }
            }
            case BEFORE_VALUE -> Values.start(valueSchema(schema, prop), b,
                    self.replace(with(IN_VALUE, seen, 0, prop, 0, 0)), out);
            case AFTER_VALUE -> {
                if (b == ',' && canAddEntry()) {
                    out.add(self.replace(with(COMMA, seen, 0, -1, 0, 0)));
                } else if (b == '}' && missingRequired(seen) == 0) {
                    out.add(self.pop());
                }
            }
            default -> {
                // IN_VALUE and FREE_KEY hold a child frame above them and never see bytes themselves
            }
        }
    }

    private void startKey(Stack self, List<Stack> out) {
        if (schema.freeKeys()) {
            out.add(self.replace(with(FREE_KEY, seen, 0, -1, 0, 0)).push(StringFrame.NORMAL_STATE));
        } else if (unseen() != 0) {
            out.add(self.replace(with(KEY, seen, 0, -1, 1, unseen())));
        }
    }

    private void matchKey(int b, Stack self, List<Stack> out) {
        List<Property> properties = schema.properties();
        long next = 0;
        for (long rest = alive; rest != 0; rest &= rest - 1) {
            int i = Long.numberOfTrailingZeros(rest);
            byte[] key = properties.get(i).key();
            if (keyPos < key.length && (key[keyPos] & 0xFF) == b) {
                if (keyPos + 1 == key.length) {
                    // A key text ends at its closing quote, so no other key text can still match: this is the key.
                    out.add(self.replace(with(COLON, seen | (1L << i), 0, i, 0, 0)));
                    return;
                }
                next |= 1L << i;
            }
        }
        if (next != 0) {
            out.add(self.replace(with(KEY, seen, 0, -1, keyPos + 1, next)));
        }
    }

    private boolean canAddEntry() {
        return schema.freeKeys() || unseen() != 0;
    }

    private long unseen() {
        int n = schema.properties().size();
        long all = n == 64 ? -1L : (1L << n) - 1;
        return all & ~seen;
    }

    private long missingRequired(long seen) {
        return schema.required() & ~seen;
    }

    @Override
    public Frame childDone() {
        if (phase == FREE_KEY) {
            return with(COLON, seen, 0, -1, 0, 0);
        }
        return with(AFTER_VALUE, seen, 0, -1, 0, 0);
    }

    static ValueSchema valueSchema(ObjectSchema schema, int prop) {
        return prop < 0 ? schema.additional() : schema.properties().get(prop).value();
    }

    /** Bytes after the entry in progress: a comma and an entry for each missing required property, the brace. */
    private static int afterValue(ObjectSchema s, long seen) {
        int sum = 1;
        for (long rest = s.required() & ~seen; rest != 0; rest &= rest - 1) {
            sum += 1 + s.properties().get(Long.numberOfTrailingZeros(rest)).entryCost();
        }
        return sum;
    }

    private static int cost(ObjectSchema s, int phase, long seen, int prop, int keyPos, long alive) {
        return switch (phase) {
            // {"a":x,"b":y} from '{': the entries, a comma between two, the brace; the same after a comma
            // when required ones remain. Otherwise after a comma the cheapest entry still allowed, and the brace.
            case OPEN -> afterValue(s, seen) == 1 ? 1 : afterValue(s, seen) - 1;
            case COMMA -> {
                if ((s.required() & ~seen) != 0) {
                    yield afterValue(s, seen) - 1;
                }
                int cheapest = s.freeKeys() ? s.freeEntryCost() : Integer.MAX_VALUE;
                int n = s.properties().size();
                for (int i = 0; i < n; i++) {
                    if ((seen & (1L << i)) == 0) {
                        cheapest = Math.min(cheapest, s.properties().get(i).entryCost());
                    }
                }
                yield cheapest + 1;
            }
            case KEY -> {
                int best = Integer.MAX_VALUE;
                for (long rest = alive; rest != 0; rest &= rest - 1) {
                    int i = Long.numberOfTrailingZeros(rest);
                    Property p = s.properties().get(i);
                    int c = p.keyCosts()[keyPos] + p.value().minLength() + afterValue(s, seen | (1L << i));
                    best = Math.min(best, c);
                }
                yield best;
            }
            case FREE_KEY -> 1 + s.additional().minLength() + afterValue(s, seen);
            case COLON -> 1 + valueSchema(s, prop).minLength() + afterValue(s, seen);
            case BEFORE_VALUE -> valueSchema(s, prop).minLength() + afterValue(s, seen);
            default -> afterValue(s, seen);
        };
    }
}
