package io.moe4j.safetensors;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Parses and validates a safetensors header by the rules of the reference implementation: a JSON object of
 * tensors plus an optional string-to-string {@code __metadata__}; offsets that tile the data buffer exactly
 * (sorted, contiguous, no gaps or overlaps); each span equal to elements × bits / 8; the last span ending at
 * the end of the file.
 */
final class HeaderParser {
    /** The reference refuses headers above 100 MB; so do we, before allocating anything for them. */
    static final long MAX_HEADER_BYTES = 100_000_000L;

    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    private HeaderParser() {
    }

    record Header(List<TensorInfo> tensors, Map<String, String> metadata) {
    }

    static Header parse(Path file, byte[] headerBytes, long dataBytes) {
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(headerBytes)).toString();
        } catch (CharacterCodingException e) {
            throw new SafetensorsException(file, "header is not valid UTF-8");
        }
        if (!text.startsWith("{")) {
            throw new SafetensorsException(file, "header is not a JSON object (it must start with '{')");
        }
        JsonNode root;
        try {
            root = JSON.readTree(text);
        } catch (JsonProcessingException e) {
            throw new SafetensorsException(file, "header is not valid JSON: " + e.getOriginalMessage());
        }
        if (root == null || !root.isObject()) {
            throw new SafetensorsException(file, "header is not a JSON object");
        }
        Map<String, String> metadata = new LinkedHashMap<>();
        List<TensorInfo> tensors = new ArrayList<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> entry = it.next();
            String name = entry.getKey();
            JsonNode node = entry.getValue();
            if (name.equals("__metadata__")) {
                parseMetadata(file, node, metadata);
            } else {
                tensors.add(parseTensor(file, name, node));
            }
        }
        checkSpans(file, tensors, dataBytes);
        return new Header(List.copyOf(tensors), Map.copyOf(metadata));
    }

    private static void parseMetadata(Path file, JsonNode node, Map<String, String> out) {
        if (!node.isObject()) {
            throw new SafetensorsException(file, "__metadata__ must be an object of strings");
        }
        node.fields().forEachRemaining(e -> {
            if (!e.getValue().isTextual()) {
                throw new SafetensorsException(file, "__metadata__ value of '" + e.getKey() + "' is not a string");
            }
            out.put(e.getKey(), e.getValue().asText());
        });
    }

    private static TensorInfo parseTensor(Path file, String name, JsonNode node) {
        if (!node.isObject()) {
            throw new SafetensorsException(file, name, "header entry is not an object");
        }
        JsonNode dtypeNode = node.get("dtype");
        if (dtypeNode == null || !dtypeNode.isTextual()) {
            throw new SafetensorsException(file, name, "missing or non-string 'dtype'");
        }
        DType dtype = DType.parse(dtypeNode.asText()).orElseThrow(() ->
                new SafetensorsException(file, name, "unknown dtype '" + dtypeNode.asText() + "'"));
        long[] shape = nonNegativeLongs(file, name, node.get("shape"), "shape", -1);
        long[] offsets = nonNegativeLongs(file, name, node.get("data_offsets"), "data_offsets", 2);
        if (offsets[1] < offsets[0]) {
            throw new SafetensorsException(file, name, "data_offsets end " + offsets[1] + " is before begin " + offsets[0]);
        }
        long elements = 1;
        long bits;
        try {
            for (long d : shape) {
                elements = Math.multiplyExact(elements, d);
            }
            bits = Math.multiplyExact(elements, (long) dtype.bits());
        } catch (ArithmeticException e) {
            throw new SafetensorsException(file, name, "shape " + java.util.Arrays.toString(shape) + " overflows");
        }
        if (bits % 8 != 0) {
            throw new SafetensorsException(file, name, "shape " + java.util.Arrays.toString(shape) + " of " + dtype
                    + " is not a whole number of bytes");
        }
        long expected = bits / 8;
        if (offsets[1] - offsets[0] != expected) {
            throw new SafetensorsException(file, name, "shape " + java.util.Arrays.toString(shape) + " of " + dtype
                    + " needs " + expected + " bytes but data_offsets span " + (offsets[1] - offsets[0]));
        }
        return new TensorInfo(name, dtype, shape, offsets[0], offsets[1]);
    }

    private static long[] nonNegativeLongs(Path file, String name, JsonNode node, String field, int requiredLength) {
        if (node == null || !node.isArray()) {
            throw new SafetensorsException(file, name, "missing or non-array '" + field + "'");
        }
        if (requiredLength >= 0 && node.size() != requiredLength) {
            throw new SafetensorsException(file, name, "'" + field + "' must have " + requiredLength + " entries");
        }
        long[] out = new long[node.size()];
        for (int i = 0; i < out.length; i++) {
            JsonNode v = node.get(i);
            if (!v.isIntegralNumber() || !v.canConvertToLong() || v.asLong() < 0) {
                throw new SafetensorsException(file, name, "'" + field + "' entry " + v + " is not a non-negative integer");
            }
            out[i] = v.asLong();
        }
        return out;
    }

    private static void checkSpans(Path file, List<TensorInfo> tensors, long dataBytes) {
        List<TensorInfo> sorted = new ArrayList<>(tensors);
        sorted.sort(Comparator.comparingLong(TensorInfo::begin).thenComparingLong(TensorInfo::end));
        long cursor = 0;
        for (TensorInfo t : sorted) {
            if (t.begin() != cursor) {
                String problem = t.begin() < cursor ? "overlaps the previous tensor" : "leaves a gap after the previous tensor";
                throw new SafetensorsException(file, t.name(), "data_offsets [" + t.begin() + ", " + t.end() + "] " + problem
                        + " (expected begin " + cursor + ")");
            }
            cursor = t.end();
        }
        if (cursor != dataBytes) {
            if (cursor > dataBytes) {
                TensorInfo last = sorted.get(sorted.size() - 1);
                throw new SafetensorsException(file, last.name(), "data_offsets end " + cursor + " is past the end of the file ("
                        + dataBytes + " data bytes): the file is truncated");
            }
            throw new SafetensorsException(file, "the file has " + (dataBytes - cursor)
                    + " bytes after the last tensor's data (buffer must end at end of file)");
        }
    }
}
