package io.moe4j.serve;

import io.moe4j.generate.FinishReason;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class ServeMetricsTest {

    @Test
    void histogramsAreCumulativeAndEveryMetricIsDeclared() {
        ServeMetrics m = new ServeMetrics();
        m.gauges(() -> 3, () -> 5);
        m.step(1, 7, 0.004);
        m.step(3, 3, 0.012);
        m.step(64, 64, 0.3);
        m.hostWork(0.25);
        m.hostWork(0.5);
        m.firstToken(0.02);
        m.firstToken(7);
        m.request("/v1/completions", 200);
        m.request("/v1/completions", 200);
        m.request("/v1/completions", 429);
        m.finished(FinishReason.STOP);
        String text = m.prometheus();
        assertThat(text).contains("moe4j_batch_size_bucket{le=\"1\"} 1\n", "moe4j_batch_size_bucket{le=\"2\"} 1\n",
                "moe4j_batch_size_bucket{le=\"4\"} 2\n", "moe4j_batch_size_bucket{le=\"64\"} 3\n",
                "moe4j_batch_size_bucket{le=\"+Inf\"} 3\n", "moe4j_batch_size_sum 68\n", "moe4j_batch_size_count 3\n",
                "moe4j_time_to_first_token_seconds_bucket{le=\"0.025\"} 1\n",
                "moe4j_time_to_first_token_seconds_bucket{le=\"5\"} 1\n",
                "moe4j_time_to_first_token_seconds_bucket{le=\"10\"} 2\n",
                "moe4j_http_requests_total{route=\"/v1/completions\",status=\"200\"} 2\n",
                "moe4j_http_requests_total{route=\"/v1/completions\",status=\"429\"} 1\n",
                "moe4j_sequences_finished_total{reason=\"stop\"} 1\n", "moe4j_queue_length 3\n",
                "moe4j_active_sequences 5\n", "moe4j_steps_total 3\n",
                "moe4j_step_seconds_bucket{le=\"0.0025\"} 0\n", "moe4j_step_seconds_bucket{le=\"0.005\"} 1\n",
                "moe4j_step_seconds_bucket{le=\"0.015\"} 2\n", "moe4j_step_seconds_bucket{le=\"0.25\"} 2\n",
                "moe4j_step_seconds_bucket{le=\"0.5\"} 3\n", "moe4j_step_seconds_count 3\n",
                "moe4j_scheduler_host_seconds_total 0.75\n");
        // Every sample line belongs to a metric declared by a TYPE line above it.
        java.util.Set<String> declared = new java.util.HashSet<>();
        for (String line : text.split("\n")) {
            if (line.startsWith("# TYPE ")) {
                declared.add(line.split(" ")[2]);
            } else if (!line.startsWith("#")) {
                String name = line.split("[{ ]")[0];
                String base = name.replaceAll("_(bucket|sum|count)$", "");
                assertThat(declared.contains(name) || declared.contains(base)).as(line).isTrue();
            }
        }
    }
}
