package io.moe4j.model;

import org.junit.jupiter.api.Test;

import java.util.Set;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A host model runs every MoE layer, linear, attention block and lm_head on one set of worker threads: a set per
 * layer would leave the idle sets spinning on the cores the busy one needs.
 */
class SharedWorkersTest {

    private static Set<Thread> cpuWorkers() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && t.getName().startsWith("moe4j-cpu-"))
                .collect(Collectors.toSet());
    }

    @Test
    void aCpuModelStartsOneSetOfWorkersAndStopsThemOnClose() {
        ModelCases.Case c = ModelCases.load("m_gptoss_mxfp4");
        Set<Thread> before = cpuWorkers();
        int threads = 3;
        try (Model model = Model.load(c.dir(), ModelOptions.defaults().withBackend("cpu").withThreads(threads))) {
            assertThat(model.config().numLayers()).as("layers sharing the workers").isGreaterThan(1);
            model.newSession().prefillLast(c.inputIds());
            Set<Thread> started = cpuWorkers();
            started.removeAll(before);
            // the caller is worker 0, so threads − 1 workers of its own
            assertThat(started).hasSize(threads - 1);
        }
        Set<Thread> after = cpuWorkers();
        after.removeAll(before);
        assertThat(after).isEmpty();
    }
}
