package io.moe4j.generate.constraint;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.MoeException;
import io.moe4j.generate.constraint.ValueSchema.AnyOfSchema;
import io.moe4j.generate.constraint.ValueSchema.AnyValueSchema;
import io.moe4j.generate.constraint.ValueSchema.ArraySchema;
import io.moe4j.generate.constraint.ValueSchema.LiteralSchema;
import io.moe4j.generate.constraint.ValueSchema.NumberSchema;
import io.moe4j.generate.constraint.ValueSchema.ObjectSchema;
import io.moe4j.generate.constraint.ValueSchema.Property;
import io.moe4j.generate.constraint.ValueSchema.StringSchema;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Compiles a JSON schema into the shapes the matcher walks. Supported: {@code type} (one or a list), {@code
 * properties}, {@code required}, {@code additionalProperties}, {@code enum}, {@code const}, {@code items}, {@code
 * prefixItems}, {@code minItems}, {@code maxItems}, {@code anyOf}, {@code oneOf}, {@code $ref} to {@code
 * #/$defs/..} or {@code #/definitions/..} (not recursive), for strings {@code pattern} (see {@link SchemaRegex}),
 * {@code minLength}, {@code maxLength} and the {@code format}s of {@link StringFormats}, and for numbers {@code
 * minimum}, {@code maximum} and their exclusive forms (draft 4's boolean ones too; {@link NumberRanges}) and {@code
 * multipleOf} ({@link MultipleOf}). Annotations ({@code title},
 * {@code description}, {@code default}, {@code examples}, other formats, ...) are ignored, as JSON Schema lets a
 * validator do. Any other keyword fails with a {@link MoeException} naming it and its path.
 *
 * <p>Where the schema allows more than the matcher offers, the matcher offers a subset, never a superset:
 * <ul>
 *   <li>an object with {@code properties} takes only those keys, whatever {@code additionalProperties} says
 *       (absent, true or a schema: extra keys are valid JSON Schema, but a generated document never needs them);
 *       an object without {@code properties} takes free keys with {@code additionalProperties}' values (any when
 *       absent or true, none when false);</li>
 *   <li>{@code oneOf} is matched as {@code anyOf}: exact when the alternatives exclude each other (different types,
 *       different enum values), which is how tool schemas use it; a document that fits two alternatives would be
 *       valid for anyOf but not oneOf;</li>
 *   <li>enum and const values are written as compact JSON, numbers have at most 20 digits a part;</li>
 *   <li>{@code integer} takes no fraction and no exponent; a number with bounds or multipleOf no exponent either.</li>
 * </ul>
 */
final class JsonSchemaCompiler {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Set<String> ANNOTATIONS = Set.of("title", "description", "default", "examples", "$schema",
            "$id", "$comment", "deprecated", "readOnly", "writeOnly", "format", "$defs", "definitions");
    private static final Set<String> SUPPORTED = Set.of("type", "properties", "required", "additionalProperties",
            "enum", "const", "items", "prefixItems", "minItems", "maxItems", "anyOf", "oneOf", "$ref", "pattern",
            "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf");
    private static final Set<String> OBJECT_KEYWORDS = Set.of("properties", "required", "additionalProperties");
    private static final Set<String> ARRAY_KEYWORDS = Set.of("items", "prefixItems", "minItems", "maxItems");
    private static final Set<String> STRING_KEYWORDS = Set.of("pattern", "minLength", "maxLength");
    private static final Set<String> NUMBER_KEYWORDS = Set.of("minimum", "maximum", "exclusiveMinimum",
            "exclusiveMaximum", "multipleOf");
    private static final Set<String> TYPES = Set.of("object", "array", "string", "number", "integer", "boolean",
            "null");
    private static final int MAX_PROPERTIES = 64;
    private static final int MAX_MIN_ITEMS = 4096;
    private static final long MAX_MIN_LENGTH = 1 << 20;

    private final JsonNode root;
    private final PieceCost cost;
    private final Set<String> resolving = new HashSet<>();
    /** The work every automaton of this schema may take together. */
    private final StringAutomaton.WorkBudget work = new StringAutomaton.WorkBudget();

    private JsonSchemaCompiler(JsonNode root, PieceCost cost) {
        this.root = root;
        this.cost = cost;
    }

    static ValueSchema compile(JsonNode schema, PieceCost cost) {
        if (schema == null || schema.isMissingNode() || schema.isNull()) {
            throw new MoeException("JSON schema is missing");
        }
        return new JsonSchemaCompiler(schema, cost).value(schema, "$");
    }

    private ValueSchema value(JsonNode s, String path) {
        if (s.isBoolean()) {
            if (s.booleanValue()) {
                return AnyValueSchema.INSTANCE;
            }
            throw new MoeException("JSON schema at " + path + " is false: no value fits it");
        }
        if (!s.isObject()) {
            throw new MoeException("JSON schema at " + path + " must be an object or a boolean, got " + s);
        }
        Set<String> keywords = new LinkedHashSet<>();
        for (Iterator<String> it = s.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (ANNOTATIONS.contains(k)) {
                continue;
            }
            if (!SUPPORTED.contains(k)) {
                throw new MoeException("unsupported JSON schema keyword '" + k + "' at " + path);
            }
            keywords.add(k);
        }
        if (keywords.contains("$ref")) {
            return reference(s, keywords, path);
        }
        if (keywords.contains("anyOf") || keywords.contains("oneOf")) {
            return alternatives(s, keywords, path);
        }
        if (keywords.contains("const") || keywords.contains("enum")) {
            return literals(s, path);
        }
        List<String> types = types(s, keywords, path);
        List<ValueSchema> alternatives = new ArrayList<>();
        for (String type : types) {
            alternatives.add(switch (type) {
                case "object" -> object(s, path);
                case "array" -> array(s, path);
                case "string" -> string(s, path);
                case "number" -> number(s, false, path);
                case "integer" -> number(s, true, path);
                case "boolean" -> literal(List.of(JSON.getNodeFactory().booleanNode(true),
                        JSON.getNodeFactory().booleanNode(false)), path);
                case "null" -> literal(List.of(JSON.getNodeFactory().nullNode()), path);
                default -> AnyValueSchema.INSTANCE;
            });
        }
        return anyOf(alternatives);
    }

    /** The listed types; without {@code type}, the one the other keywords imply, or any value. */
    private static List<String> types(JsonNode s, Set<String> keywords, String path) {
        JsonNode type = s.get("type");
        if (type == null) {
            boolean object = keywords.stream().anyMatch(OBJECT_KEYWORDS::contains);
            boolean array = keywords.stream().anyMatch(ARRAY_KEYWORDS::contains);
            // an enforced format applies to strings only: the value is written as one (a narrowing)
            boolean string = keywords.stream().anyMatch(STRING_KEYWORDS::contains) || (s.path("format").isTextual()
                    && StringFormats.expression(s.get("format").textValue()).isPresent());
            boolean number = keywords.stream().anyMatch(NUMBER_KEYWORDS::contains);
            if ((object ? 1 : 0) + (array ? 1 : 0) + (string ? 1 : 0) + (number ? 1 : 0) > 1) {
                throw new MoeException("JSON schema at " + path + " has keywords of more than one of object, array, "
                        + "string and number and no type");
            }
            return List.of(object ? "object" : array ? "array" : string ? "string" : number ? "number" : "any");
        }
        List<String> types = new ArrayList<>();
        if (type.isTextual()) {
            types.add(type.textValue());
        } else if (type.isArray() && !type.isEmpty()) {
            type.forEach(t -> types.add(t.asText()));
        } else {
            throw new MoeException("JSON schema 'type' at " + path + " must be a type name or a list of them");
        }
        for (String t : types) {
            if (!TYPES.contains(t)) {
                throw new MoeException("unknown JSON schema type '" + t + "' at " + path + ".type");
            }
        }
        return types;
    }

    private ValueSchema reference(JsonNode s, Set<String> keywords, String path) {
        if (keywords.size() > 1) {
            keywords.remove("$ref");
            throw new MoeException("unsupported JSON schema keyword '" + keywords.iterator().next()
                    + "' beside $ref at " + path);
        }
        String ref = s.get("$ref").asText();
        if (!ref.startsWith("#/")) {
            throw new MoeException("unsupported $ref '" + ref + "' at " + path + ": only '#/...' within the schema");
        }
        JsonNode target = root.at(percentDecoded(ref.substring(1)));
        if (target.isMissingNode()) {
            throw new MoeException("$ref '" + ref + "' at " + path + " points to nothing in the schema");
        }
        if (!resolving.add(ref)) {
            throw new MoeException("recursive $ref '" + ref + "' at " + path + " is not supported");
        }
        try {
            return value(target, ref);
        } finally {
            resolving.remove(ref);
        }
    }

    /** A URI fragment's %XX escapes decoded (as UTF-8), as a $ref's JSON pointer is read. */
    private static String percentDecoded(String fragment) {
        if (fragment.indexOf('%') < 0) {
            return fragment;
        }
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        byte[] bytes = fragment.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        for (int i = 0; i < bytes.length; i++) {
            int hi = i + 2 < bytes.length && bytes[i] == '%' ? Character.digit(bytes[i + 1], 16) : -1;
            int lo = hi >= 0 ? Character.digit(bytes[i + 2], 16) : -1;
            if (lo >= 0) {
                out.write(hi * 16 + lo);
                i += 2;
            } else {
                out.write(bytes[i]);
            }
        }
        return out.toString(java.nio.charset.StandardCharsets.UTF_8);
    }

    private ValueSchema alternatives(JsonNode s, Set<String> keywords, String path) {
        if (keywords.size() > 1) {
            String other = keywords.stream().filter(k -> !k.equals("anyOf") && !k.equals("oneOf")).findFirst()
                    .orElse("oneOf");
            throw new MoeException("unsupported JSON schema keyword '" + other + "' beside anyOf/oneOf at " + path);
        }
        String key = keywords.iterator().next();
        JsonNode list = s.get(key);
        if (!list.isArray() || list.isEmpty()) {
            throw new MoeException("JSON schema '" + key + "' at " + path + " must be a non-empty list");
        }
        List<ValueSchema> alternatives = new ArrayList<>();
        for (int i = 0; i < list.size(); i++) {
            alternatives.add(value(list.get(i), path + "." + key + "[" + i + "]"));
        }
        return anyOf(alternatives);
    }

    private static ValueSchema anyOf(List<ValueSchema> alternatives) {
        if (alternatives.size() == 1) {
            return alternatives.getFirst();
        }
        int min = alternatives.stream().mapToInt(ValueSchema::minLength).min().orElseThrow();
        return new AnyOfSchema(List.copyOf(alternatives), min);
    }

    /** enum and const, kept to the values whose type the schema's {@code type} (if any) allows. */
    private ValueSchema literals(JsonNode s, String path) {
        List<JsonNode> values = new ArrayList<>();
        if (s.has("const")) {
            values.add(s.get("const"));
        }
        if (s.has("enum")) {
            JsonNode list = s.get("enum");
            if (!list.isArray()) {
                throw new MoeException("JSON schema 'enum' at " + path + " must be a list");
            }
            List<JsonNode> listed = new ArrayList<>();
            list.forEach(listed::add);
            values = s.has("const") ? values.stream().filter(listed::contains).toList() : listed;
        }
        for (String k : List.of("properties", "items", "prefixItems", "minItems", "maxItems", "required",
                "additionalProperties")) {
            if (s.has(k)) {
                throw new MoeException("unsupported JSON schema keyword '" + k + "' beside enum/const at " + path);
            }
        }
        if (s.has("pattern") || s.has("minLength") || s.has("maxLength") || s.has("format")) {
            // the string rule holds for the listed strings too
            StringRule rule = rule(s, path);
            if (rule != null) {
                values = values.stream().filter(v -> !v.isTextual() || fits(rule, v.textValue())).toList();
            }
        }
        if (NUMBER_KEYWORDS.stream().anyMatch(s::has)) {
            // the bounds hold for the listed numbers too
            values.stream().filter(JsonNode::isNumber).forEach(v -> checkFinite(v, "enum", path));
            values = values.stream().filter(v -> !v.isNumber() || withinBounds(s, v.decimalValue(), path)).toList();
        }
        if (s.has("type")) {
            Set<String> types = new HashSet<>(types(s, Set.of("type"), path));
            values = values.stream().filter(v -> types.contains(typeOf(v))
                    || (types.contains("number") && v.isNumber())).toList();
        }
        if (values.isEmpty()) {
            throw new MoeException("JSON schema at " + path + " allows no value: no enum/const value fits its type, "
                    + "pattern, format, length or bounds");
        }
        return literal(values, path);
    }

    /** The first surrogate of {@code text} that is not half of a pair, or -1. */
    private static int loneSurrogate(String text) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                return c;
            }
        }
        return -1;
    }

    private static String typeOf(JsonNode v) {
        if (v.isIntegralNumber() || (v.isNumber() && v.asDouble() == Math.rint(v.asDouble()))) {
            return "integer";
        }
        if (v.isNumber()) {
            return "number";
        }
        return switch (v.getNodeType()) {
            case STRING -> "string";
            case BOOLEAN -> "boolean";
            case NULL -> "null";
            case ARRAY -> "array";
            default -> "object";
        };
    }

    private LiteralSchema literal(List<JsonNode> values, String path) {
        Set<String> distinct = new LinkedHashSet<>();
        for (JsonNode v : values) {
            if (hasNonFinite(v)) {
                // Jackson would write it as the string "Infinity"
                throw new MoeException("JSON schema at " + path + " lists a number beyond what a float64 holds in "
                        + "enum/const");
            }
            String text;
            try {
                text = JSON.writeValueAsString(v);
            } catch (JsonProcessingException e) {
                throw new MoeException("cannot write enum value at " + path + ": " + e.getMessage(), e);
            }
            int lone = loneSurrogate(text);
            if (lone >= 0) {
                // UTF-8 has no bytes for it: the value would go out with a '?' in its place
                throw new MoeException("JSON schema at " + path + " lists an enum/const value holding a lone UTF-16 "
                        + "surrogate (U+" + Integer.toHexString(lone).toUpperCase() + "), which no text can spell");
            }
            distinct.add(text);
        }
        byte[][] texts = distinct.stream().map(t -> t.getBytes(java.nio.charset.StandardCharsets.UTF_8))
                .toArray(byte[][]::new);
        return LiteralSchema.of(texts, cost);
    }

    private static boolean hasNonFinite(JsonNode v) {
        if (v.isFloatingPointNumber()) {
            return !Double.isFinite(v.doubleValue());
        }
        for (JsonNode child : v) {
            if (hasNonFinite(child)) {
                return true;
            }
        }
        return false;
    }

    /** A bound or a listed number must be a number a float64 holds (1e400 reads as infinity). */
    private static void checkFinite(JsonNode n, String key, String path) {
        if (!n.isNumber()) {
            throw new MoeException("JSON schema '" + key + "' at " + path + " must be a number, got " + n);
        }
        if (n.isFloatingPointNumber() && !Double.isFinite(n.doubleValue())) {
            throw new MoeException("JSON schema '" + key + "' at " + path + " is beyond what a float64 holds");
        }
    }

    private static boolean withinBounds(JsonNode s, java.math.BigDecimal v, String path) {
        JsonNode divisor = s.get("multipleOf");
        if (divisor != null && !MultipleOf.divides(divisor(divisor, path), v)) {
            return false;
        }
        for (String key : List.of("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")) {
            JsonNode bound = s.get(key);
            if (bound == null || (bound.isBoolean() && key.startsWith("exclusive"))) {
                continue;
            }
            checkFinite(bound, key, path);
            boolean exclusive = exclusive(s, key);
            int c = v.compareTo(bound.decimalValue());
            boolean lower = key.endsWith("inimum");
            if (lower ? (exclusive ? c <= 0 : c < 0) : (exclusive ? c >= 0 : c > 0)) {
                return false;
            }
        }
        return true;
    }

    /** The schema's multipleOf: a number above zero with at most {@link NumberFrame#MAX_DIGITS} digits a part. */
    private static java.math.BigDecimal divisor(JsonNode divisor, String path) {
        checkFinite(divisor, "multipleOf", path);
        java.math.BigDecimal m = divisor.decimalValue();
        if (m.signum() <= 0) {
            throw new MoeException("JSON schema 'multipleOf' at " + path + " must be greater than 0, got " + divisor);
        }
        if (m.stripTrailingZeros().scale() > NumberFrame.MAX_DIGITS) {
            throw new MoeException("JSON schema 'multipleOf' at " + path + " is " + divisor + "; more than "
                    + NumberFrame.MAX_DIGITS + " fraction digits are not supported");
        }
        return m;
    }

    /** Whether bound {@code key} excludes its value: an exclusive* keyword, or draft 4's boolean beside minimum/maximum. */
    private static boolean exclusive(JsonNode s, String key) {
        return key.startsWith("exclusive")
                || s.path("exclusive" + Character.toUpperCase(key.charAt(0)) + key.substring(1)).asBoolean(false);
    }

    /** A number, held to the schema's bounds where it has any (then written without exponent). */
    private ValueSchema number(JsonNode s, boolean integer, String path) {
        List<SchemaRegex.Node> expressions = new ArrayList<>();
        boolean draft4Exclusive = false;
        for (String key : List.of("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")) {
            JsonNode bound = s.get(key);
            if (bound == null) {
                continue;
            }
            if (bound.isBoolean() && key.startsWith("exclusive")) {
                draft4Exclusive = true; // draft 4: a flag on minimum or maximum, read below
                continue;
            }
            checkFinite(bound, key, path);
            boolean exclusive = exclusive(s, key);
            java.math.BigDecimal value = bound.decimalValue();
            if (value.abs().compareTo(java.math.BigDecimal.TEN.pow(NumberFrame.MAX_DIGITS)) >= 0
                    || value.stripTrailingZeros().scale() > NumberFrame.MAX_DIGITS) {
                throw new MoeException("JSON schema '" + key + "' at " + path + " is " + bound + "; bounds with more "
                        + "than " + NumberFrame.MAX_DIGITS + " digits a part are not supported");
            }
            String e = key.endsWith("inimum") ? NumberRanges.atLeast(value, exclusive, integer)
                    : NumberRanges.atMost(value, exclusive, integer);
            expressions.add(SchemaRegex.parse(e, path + "." + key));
        }
        if (expressions.isEmpty() && draft4Exclusive) {
            throw new MoeException("JSON schema at " + path + " has a boolean exclusiveMinimum/exclusiveMaximum "
                    + "without the minimum/maximum it qualifies");
        }
        List<StringAutomaton.Machine> machines = s.has("multipleOf")
                ? List.of(MultipleOf.machine(divisor(s.get("multipleOf"), path), path))
                : List.of();
        if (expressions.isEmpty() && machines.isEmpty()) {
            return integer ? NumberSchema.INTEGER : NumberSchema.NUMBER;
        }
        if (machines.isEmpty()) {
            expressions.add(SchemaRegex.parse(NumberRanges.syntax(integer), path));
            StringRule rule = StringAutomaton.of(expressions, 0, -1, path + " (bounds)", work);
            return new ValueSchema.RuleNumberSchema(rule, rule.dist(rule.start()));
        }
        // The digit caps multiplied into a remainder's states grow too large: the text's length is capped beside.
        expressions.add(SchemaRegex.parse(NumberRanges.unboundedSyntax(integer), path));
        StringAutomaton automaton;
        try {
            automaton = StringAutomaton.of(expressions, machines, 0, -1, path + " (bounds, multipleOf)", work);
        } catch (MoeException e) {
            if (e.getMessage().contains("automaton states")) {
                throw new MoeException("JSON schema at " + path + ": multipleOf " + s.get("multipleOf")
                        + (expressions.size() > 1 ? " with its minimum/maximum" : "") + " needs more than "
                        + StringAutomaton.MAX_STATES + " automaton states; a divisor with fewer digits other than "
                        + "trailing zeros (or bounds with fewer digits) fits", e);
            }
            throw e;
        }
        StringRule rule = new MaxLengthRule(automaton, NumberRanges.MAX_TEXT);
        return new ValueSchema.RuleNumberSchema(rule, rule.dist(rule.start()));
    }

    /** A string, held to the schema's pattern, format and length bounds where it has any. */
    private ValueSchema string(JsonNode s, String path) {
        StringRule rule = rule(s, path);
        if (rule == null) {
            return StringSchema.INSTANCE;
        }
        return new ValueSchema.RuleStringSchema(rule, checked((long) rule.dist(rule.start()) + 2, path));
    }

    /** The rule of the schema's string keywords; null when it has none (an annotation-only format counts none). */
    private StringRule rule(JsonNode s, String path) {
        List<SchemaRegex.Node> expressions = new ArrayList<>();
        JsonNode pattern = s.get("pattern");
        if (pattern != null) {
            if (!pattern.isTextual()) {
                throw new MoeException("JSON schema 'pattern' at " + path + " must be a string, got " + pattern);
            }
            expressions.add(SchemaRegex.parse(pattern.textValue(), path));
        }
        JsonNode format = s.get("format");
        if (format != null && !format.isTextual()) {
            throw new MoeException("JSON schema 'format' at " + path + " must be a string, got " + format);
        }
        if (format != null) {
            StringFormats.expression(format.textValue())
                    .ifPresent(e -> expressions.add(SchemaRegex.parse(e, path + " (format " + format.textValue() + ")")));
        }
        int min = count(s, "minLength", 0, path);
        int max = s.has("maxLength") ? count(s, "maxLength", 0, path) : -1;
        if (max >= 0 && max < min) {
            throw new MoeException("JSON schema at " + path + " allows no string: minLength " + min + " is above "
                    + "maxLength " + max);
        }
        if (expressions.isEmpty()) {
            return min == 0 && max < 0 ? null : new LengthRule(min, max);
        }
        if (max < 0) {
            return StringAutomaton.of(expressions, min, max, path, work);
        }
        // the maximum beside the automaton, not in it (MaxLengthRule)
        if (max > MaxLengthRule.MAX_BOUND) {
            throw new MoeException("JSON schema 'maxLength' at " + path + " is " + max + "; beside a pattern or format "
                    + "at most " + MaxLengthRule.MAX_BOUND + " is supported");
        }
        StringAutomaton inner = StringAutomaton.of(expressions, min, -1, path, work);
        if (inner.minChars(inner.start()) > max) {
            throw new MoeException("JSON schema at " + path + " allows no value: its shortest string has "
                    + inner.minChars(inner.start()) + " characters, more than maxLength " + max);
        }
        return new MaxLengthRule(inner, max);
    }

    private static boolean fits(StringRule rule, String text) {
        int state = rule.start();
        for (int cp : text.codePoints().toArray()) {
            state = rule.step(state, cp);
            if (state == StringRule.DEAD) {
                return false;
            }
        }
        return rule.accepts(state);
    }

    private ObjectSchema object(JsonNode s, String path) {
        List<Property> properties = new ArrayList<>();
        JsonNode props = s.get("properties");
        if (props != null) {
            if (!props.isObject()) {
                throw new MoeException("JSON schema 'properties' at " + path + " must be an object");
            }
            if (props.size() > MAX_PROPERTIES) {
                throw new MoeException("JSON schema at " + path + " lists " + props.size()
                        + " properties; at most " + MAX_PROPERTIES + " are supported");
            }
            for (Iterator<Map.Entry<String, JsonNode>> it = props.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                ValueSchema v = value(e.getValue(), path + ".properties." + e.getKey());
                byte[] key;
                try {
                    key = JSON.writeValueAsBytes(e.getKey());
                } catch (JsonProcessingException ex) {
                    throw new MoeException("cannot write property name at " + path + ": " + ex.getMessage(), ex);
                }
                byte[] piece = java.util.Arrays.copyOf(key, key.length + 1);
                piece[key.length] = ':';
                int[] keyCosts = cost.suffixes(piece);
                properties.add(new Property(e.getKey(), key, keyCosts, v,
                        checked((long) keyCosts[0] + v.minLength(), path)));
            }
        }
        long required = 0;
        JsonNode req = s.get("required");
        if (req != null) {
            if (!req.isArray()) {
                throw new MoeException("JSON schema 'required' at " + path + " must be a list of names");
            }
            for (JsonNode r : req) {
                int index = indexOf(properties, r.asText());
                if (index < 0) {
                    throw new MoeException("required property '" + r.asText() + "' at " + path
                            + ".required is not listed in properties");
                }
                required |= 1L << index;
            }
        }
        ValueSchema additional = null;
        if (properties.isEmpty()) {
            JsonNode add = s.get("additionalProperties");
            if (add == null || (add.isBoolean() && add.booleanValue())) {
                additional = AnyValueSchema.INSTANCE;
            } else if (!(add.isBoolean())) {
                additional = value(add, path + ".additionalProperties");
            }
        } else if (s.has("additionalProperties")) {
            JsonNode add = s.get("additionalProperties");
            if (!add.isBoolean()) {
                value(add, path + ".additionalProperties"); // checked for unsupported keywords, then unused
            }
        }
        long min = 2;
        int count = Long.bitCount(required);
        for (long rest = required; rest != 0; rest &= rest - 1) {
            min += properties.get(Long.numberOfTrailingZeros(rest)).entryCost();
        }
        min += Math.max(0, count - 1);
        return new ObjectSchema(List.copyOf(properties), required, additional, checked(min, path));
    }

    private static int indexOf(List<Property> properties, String name) {
        for (int i = 0; i < properties.size(); i++) {
            if (properties.get(i).name().equals(name)) {
                return i;
            }
        }
        return -1;
    }

    private ArraySchema array(JsonNode s, String path) {
        List<ValueSchema> prefix = new ArrayList<>();
        JsonNode pre = s.get("prefixItems");
        if (pre != null) {
            if (!pre.isArray()) {
                throw new MoeException("JSON schema 'prefixItems' at " + path + " must be a list");
            }
            for (int i = 0; i < pre.size(); i++) {
                prefix.add(value(pre.get(i), path + ".prefixItems[" + i + "]"));
            }
        }
        ValueSchema items = AnyValueSchema.INSTANCE;
        JsonNode it = s.get("items");
        if (it != null) {
            if (it.isArray()) {
                throw new MoeException("unsupported JSON schema keyword 'items' as a list at " + path
                        + " (use prefixItems)");
            }
            items = it.isBoolean() && !it.booleanValue() ? null : value(it, path + ".items");
        }
        int minItems = count(s, "minItems", 0, path);
        int maxItems = count(s, "maxItems", Integer.MAX_VALUE, path);
        if (minItems > MAX_MIN_ITEMS) {
            throw new MoeException("JSON schema 'minItems' at " + path + " is " + minItems + "; at most "
                    + MAX_MIN_ITEMS + " is supported");
        }
        ArraySchema probe = new ArraySchema(List.copyOf(prefix), items, minItems, maxItems, 0);
        if (minItems > probe.capacity()) {
            throw new MoeException("JSON schema at " + path + " needs " + minItems + " items but allows at most "
                    + probe.capacity());
        }
        long min = 1;
        for (int i = 0; i < minItems; i++) {
            min += 1 + probe.item(i).minLength();
        }
        min = minItems == 0 ? 2 : min;
        return new ArraySchema(probe.prefix(), items, minItems, maxItems, checked(min, path));
    }

    private static int count(JsonNode s, String key, int absent, String path) {
        JsonNode n = s.get(key);
        if (n == null) {
            return absent;
        }
        // 2.0 is an integer too (from draft 6 on)
        boolean integral = n.isIntegralNumber() || (n.isNumber() && n.canConvertToInt()
                && n.decimalValue().stripTrailingZeros().scale() <= 0);
        if (!n.canConvertToInt() || n.asInt() < 0 || !integral) {
            throw new MoeException("JSON schema '" + key + "' at " + path + " must be a non-negative integer, got "
                    + n);
        }
        return n.asInt();
    }

    private static int checked(long length, String path) {
        if (length > MAX_MIN_LENGTH) {
            throw new MoeException("JSON schema at " + path + " needs documents of at least " + length
                    + " bytes; at most " + MAX_MIN_LENGTH + " are supported");
        }
        return (int) length;
    }
}
