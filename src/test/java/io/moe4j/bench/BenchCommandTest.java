package io.moe4j.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.cli.MoeCommand;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code moe bench} from the command line. */
class BenchCommandTest {

    @Test
    void oneJsonLinePerRun() throws Exception {
        String out = capture(() -> assertThat(MoeCommand.execute("bench", "--preset", "gpt-oss-20b", "--tokens", "1,2",
                "--iterations", "2", "--warmup", "1", "--threads", "2", "--json", "--bandwidth-mib", "64")).isZero());
        String[] lines = out.strip().split("\n");
        assertThat(lines).hasSize(2);
        for (int i = 0; i < 2; i++) {
            JsonNode j = new ObjectMapper().readTree(lines[i]);
            assertThat(j.get("preset").asText()).isEqualTo("gpt-oss-20b");
            assertThat(j.get("scheme").asText()).isEqualTo("mxfp4");
            assertThat(j.get("backend").asText()).isEqualTo("cpu");
            assertThat(j.get("tokens").asInt()).isEqualTo(i + 1);
            assertThat(j.get("routing").asText()).isEqualTo("random");
            // gpt-oss-20b MXFP4 experts: 2 × 2880 + 2880 rows of 2880 codes, 4.25 bits each.
            long perExpert = (5760L + 2880) * 2880 * 17 / 32;
            // One token routes to 4 distinct experts; two tokens to 4 to 8 (a mean over the calls).
            if (i == 0) {
                assertThat(j.get("weight_bytes").asLong()).isEqualTo(4 * perExpert);
            } else {
                assertThat(j.get("weight_bytes").asLong()).isBetween(4 * perExpert, 8 * perExpert);
            }
            assertThat(j.get("effective_gbps").asDouble()).isPositive();
            assertThat(j.get("machine_gbps").asDouble()).isPositive();
            // The JSON rounds ms_per_call to 4 decimals and tokens_per_s to 2: on a loaded machine a call can take
            // seconds, and then tokens_per_s's rounding alone moves the product by more than 0.1%.
            double ms = j.get("ms_per_call").asDouble();
            double perSecond = j.get("tokens_per_s").asDouble();
            double rounding = ms * 0.005 + perSecond * 0.00005;
            assertThat(ms * perSecond).isCloseTo(1000.0 * (i + 1),
                    org.assertj.core.data.Offset.offset(Math.max(1.0 * (i + 1), 1.01 * rounding)));
        }
    }

    @Test
    void unknownPresetIsAUserError() {
        assertThat(MoeCommand.execute("bench", "--preset", "gpt-5")).isEqualTo(1);
        assertThat(MoeCommand.execute("bench", "--scheme", "q4_k")).isEqualTo(1);
        assertThat(MoeCommand.execute("bench", "--backend", "tpu")).isEqualTo(1);
        assertThat(MoeCommand.execute("bench", "--tokens", "0")).isEqualTo(1);
    }

    private static String capture(Runnable r) {
        PrintStream old = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
        try {
            r.run();
        } finally {
            System.setOut(old);
        }
        return buf.toString(StandardCharsets.UTF_8);
    }
}
