package io.moe4j.generate.constraint;

import io.moe4j.generate.constraint.ValueSchema.AnyOfSchema;
import io.moe4j.generate.constraint.ValueSchema.AnyValueSchema;
import io.moe4j.generate.constraint.ValueSchema.ArraySchema;
import io.moe4j.generate.constraint.ValueSchema.LiteralSchema;
import io.moe4j.generate.constraint.ValueSchema.NumberSchema;
import io.moe4j.generate.constraint.ValueSchema.ObjectSchema;
import io.moe4j.generate.constraint.ValueSchema.RuleNumberSchema;
import io.moe4j.generate.constraint.ValueSchema.RuleStringSchema;
import io.moe4j.generate.constraint.ValueSchema.StringSchema;
import java.util.List;

/** Opens a value: which frame the first byte of a value of a given shape pushes. */
final class Values {
    /** Frames a stack may hold before a free value (json_object mode, {@code {}}) may no longer open one. */
    static final int MAX_FREE_DEPTH = 32;

    private Values() {
    }

    /**
     * Feeds {@code b} as the first byte of a value of {@code schema}; {@code parent} is the stack whose top already
     * waits for that value.
     */
    static void start(ValueSchema schema, int b, Stack parent, List<Stack> out) {
        switch (schema) {
            case ObjectSchema object -> {
                if (b == '{') {
                    out.add(parent.push(ObjectFrame.open(object)));
                }
            }
            case ArraySchema array -> {
                if (b == '[') {
                    out.add(parent.push(ArrayFrame.open(array)));
                }
            }
            case StringSchema string -> {
                if (b == '"') {
                    out.add(parent.push(StringFrame.NORMAL_STATE));
                }
            }
            case RuleStringSchema string -> {
                if (b == '"') {
                    out.add(parent.push(RuleStringFrame.open(string.rule())));
                }
            }
            case RuleNumberSchema number -> {
                RuleNumberFrame first = RuleNumberFrame.first(number.rule(), b);
                if (first != null) {
                    out.add(parent.push(first));
                }
            }
            case NumberSchema number -> {
                NumberFrame first = NumberFrame.first(number.integer(), b);
                if (first != null) {
                    out.add(parent.push(first));
                }
            }
            case LiteralSchema literal -> LiteralFrame.start(literal, b, parent, out);
            case AnyOfSchema anyOf -> {
                for (ValueSchema alternative : anyOf.alternatives()) {
                    start(alternative, b, parent, out);
                }
            }
            case AnyValueSchema any -> {
                // Free JSON nests no deeper than MAX_FREE_DEPTH: parsers refuse deep nesting (Jackson at 1000)
                // and a random model would otherwise open brackets for as long as its budget lasts.
                boolean nest = parent.depth() < MAX_FREE_DEPTH;
                switch (b) {
                    case '{' -> start(nest ? AnyValueSchema.OBJECT : AnyValueSchema.KEYWORDS, b, parent, out);
                    case '[' -> start(nest ? AnyValueSchema.ARRAY : AnyValueSchema.KEYWORDS, b, parent, out);
                    case '"' -> start(StringSchema.INSTANCE, b, parent, out);
                    case 't', 'f', 'n' -> start(AnyValueSchema.KEYWORDS, b, parent, out);
                    default -> start(NumberSchema.NUMBER, b, parent, out);
                }
            }
        }
    }
}
