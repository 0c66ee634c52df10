package io.moe4j.generate.constraint;

import java.util.List;

/**
 * The shape a JSON value may take, compiled from a JSON schema into the few forms the matcher walks.
 * {@link #minLength()} is the length in bytes of the shortest compact text of a value of this shape; the token
 * budget is reasoned about with it.
 */
sealed interface ValueSchema {

    int minLength();

    /** Any string (escapes and UTF-8 checked by the matcher). */
    enum StringSchema implements ValueSchema {
        INSTANCE;

        @Override
        public int minLength() {
            return 2;
        }
    }

    /**
     * A string whose characters follow a rule ({@code pattern}, {@code format}, {@code minLength}, {@code
     * maxLength}); its shortest text is the quotes around the rule's shortest string.
     */
    record RuleStringSchema(StringRule rule, int minLength) implements ValueSchema {
        static RuleStringSchema of(StringRule rule) {
            return new RuleStringSchema(rule, rule.dist(rule.start()) + 2);
        }
    }

    /** A JSON number held to bounds by a rule over its bytes ({@link NumberRanges}). */
    record RuleNumberSchema(StringRule rule, int minLength) implements ValueSchema {
    }

    /** A JSON number; {@code integer} allows no fraction and no exponent. */
    record NumberSchema(boolean integer) implements ValueSchema {
        static final NumberSchema NUMBER = new NumberSchema(false);
        static final NumberSchema INTEGER = new NumberSchema(true);

        @Override
        public int minLength() {
            return 1;
        }
    }

    /**
     * One of a fixed set of texts: enum and const values, true, false, null. Each text is the compact JSON of a
     * value, so the document spells the value in that one way (a narrowing: "a" written with the escape
     * {@code \\u0061} is not offered).
     */
    record LiteralSchema(byte[][] texts, int[][] suffixCosts, int minLength) implements ValueSchema {

        static LiteralSchema of(byte[][] texts, PieceCost cost) {
            int[][] suffixes = new int[texts.length][];
            int min = Integer.MAX_VALUE;
            for (int i = 0; i < texts.length; i++) {
                suffixes[i] = cost.suffixes(texts[i]);
                min = Math.min(min, suffixes[i][0]);
            }
            return new LiteralSchema(texts, suffixes, min);
        }
    }

    /** A value that fits any of the alternatives (anyOf, oneOf, a list of types). */
    record AnyOfSchema(List<ValueSchema> alternatives, int minLength) implements ValueSchema {
    }

    /**
     * An object. With {@code properties} listed only those may appear (each at most once, in any order) and
     * {@code required} ones must; without any, keys are free strings whose values match {@code additional}
     * (null: no key at all).
     */
    record ObjectSchema(List<Property> properties, long required, ValueSchema additional, int minLength)
            implements ValueSchema {

        boolean freeKeys() {
            return properties.isEmpty() && additional != null;
        }

        /** Bytes of a free entry at its shortest: {@code "":} and the shortest value. */
        int freeEntryCost() {
            return 3 + additional.minLength();
        }
    }

    /**
     * A listed property: its name as the JSON string text the document must spell ({@code key}, quotes included),
     * {@code keyCosts[i]} the cost of the key's bytes from i on and the colon, and {@code entryCost} = key, colon and
     * the value's shortest text.
     */
    record Property(String name, byte[] key, int[] keyCosts, ValueSchema value, int entryCost) {
    }

    /**
     * An array whose item i matches {@code prefix[i]} and later items {@code items} (null: no items after the
     * prefix), with between {@code minItems} and {@code maxItems} items.
     */
    record ArraySchema(List<ValueSchema> prefix, ValueSchema items, int minItems, int maxItems, int minLength)
            implements ValueSchema {

        ValueSchema item(int index) {
            return index < prefix.size() ? prefix.get(index) : items;
        }

        /** The most items this array may hold. */
        int capacity() {
            return items == null ? Math.min(maxItems, prefix.size()) : maxItems;
        }

        /** Bytes to add items from..minItems-1, each with the comma before it. */
        int need(int from) {
            int sum = 0;
            for (int i = from; i < minItems; i++) {
                sum += 1 + item(i).minLength();
            }
            return sum;
        }
    }

    /** Any JSON value: json_object mode's values, an empty schema, {@code true}. */
    enum AnyValueSchema implements ValueSchema {
        INSTANCE;

        static final ObjectSchema OBJECT = new ObjectSchema(List.of(), 0, INSTANCE, 2);
        static final ArraySchema ARRAY = new ArraySchema(List.of(), INSTANCE, 0, Integer.MAX_VALUE, 2);
        static final LiteralSchema KEYWORDS = LiteralSchema.of(new byte[][] {
                "true".getBytes(), "false".getBytes(), "null".getBytes()}, PieceCost.BYTES);

        @Override
        public int minLength() {
            return 1;
        }
    }
}
