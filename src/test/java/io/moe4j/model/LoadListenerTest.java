package io.moe4j.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A model tells its load progress a layer at a time, in order, with the model's layer count. */
class LoadListenerTest {
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"cpu", "emulation"})
    void everyLayerIsToldInOrder(String backend) {
        ModelCases.Case c = ModelCases.load("m_gptoss_mxfp4");
        List<int[]> told = new ArrayList<>();
        ModelOptions options = ModelOptions.defaults().withBackend(backend).withThreads(2)
                .withLoadListener((done, of) -> told.add(new int[] {done, of}));
        try (Model model = Model.load(c.dir(), options)) {
            int layers = model.config().layers().size();
            assertThat(layers).isGreaterThan(1);
            assertThat(told).hasSize(layers);
            for (int i = 0; i < layers; i++) {
                assertThat(told.get(i)).containsExactly(i + 1, layers);
            }
        }
    }
}
