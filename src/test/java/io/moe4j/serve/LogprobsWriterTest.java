package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.generate.TokenLogprobs;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The completions shape's text offsets: characters, as a Python client slices the reply's text. */
class LogprobsWriterTest {
    @Test
    void textOffsetsCountCodePointsNotUtf16Units() {
        String[] pieces = {"h", "é", " 😀", "🦄", " 世界", "!"};
        LogprobsWriter w = new LogprobsWriter(new ObjectMapper(), false,
                id -> pieces[id].getBytes(StandardCharsets.UTF_8));
        List<TokenLogprobs> tokens = new java.util.ArrayList<>();
        for (int i = 0; i < pieces.length; i++) {
            tokens.add(new TokenLogprobs(i, -1f, new int[0], new float[0], 0));
        }
        JsonNode first = w.write(tokens.subList(0, 3));
        JsonNode rest = w.write(tokens.subList(3, pieces.length));
        List<Integer> offsets = new java.util.ArrayList<>();
        first.get("text_offset").forEach(o -> offsets.add(o.asInt()));
        rest.get("text_offset").forEach(o -> offsets.add(o.asInt()));
        // the reply's text, indexed as a sequence of characters
        int[] text = String.join("", pieces).codePoints().toArray();
        for (int i = 0; i < pieces.length; i++) {
            int[] piece = pieces[i].codePoints().toArray();
            assertThat(java.util.Arrays.copyOfRange(text, offsets.get(i), offsets.get(i) + piece.length))
                    .as("piece %d", i).containsExactly(piece);
        }
        assertThat(offsets).containsExactly(0, 1, 2, 4, 5, 8);
    }
}
