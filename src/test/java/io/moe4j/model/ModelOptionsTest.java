package io.moe4j.model;

import io.moe4j.backend.KernelActivations;
import io.moe4j.backend.oracle.BackendRegistry;
import java.util.List;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Which whole-model backends take int8 kernel activations (the layer backend's own rule decides), and several GPUs. */
class ModelOptionsTest {
    @Test
    void int8ActivationsFollowTheBackendsOwnRule() {
        BackendRegistry layers = BackendRegistry.standard();
        for (String backend : ModelOptions.BACKENDS) {
            ModelOptions floats = ModelOptions.defaults().withBackend(backend);
            boolean computes = layers.find(backend).orElseThrow().backend().computesWith(KernelActivations.INT8);
            if (computes) {
                assertThat(floats.withKernelActivations(KernelActivations.INT8).kernelActivations())
                        .isEqualTo(KernelActivations.INT8);
            } else {
                assertThatThrownBy(() -> floats.withKernelActivations(KernelActivations.INT8))
                        .as(backend).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("--activations int8").hasMessageContaining("not " + backend)
                        .hasMessageContaining("backend " + String.join(" or ", layers.computingWith(KernelActivations.INT8)));
            }
        }
        // The cpu backend's kernels do compute with int8; the others multiply in float.
        assertThat(layers.computingWith(KernelActivations.INT8)).containsExactly("cpu");
    }

    @Test
    void severalGpusNeedTheCudaBackend() {
        assertThat(ModelOptions.defaults().gpus()).isEqualTo(1);
        assertThat(ModelOptions.defaults().withBackend(ModelOptions.CUDA).withGpus(4).gpus()).isEqualTo(4);
        for (String backend : List.of("emulation", "cpu")) {
            assertThatThrownBy(() -> ModelOptions.defaults().withBackend(backend).withGpus(2))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("--gpus 2").hasMessageContaining("needs --backend cuda, not " + backend);
        }
        assertThatThrownBy(() -> ModelOptions.defaults().withBackend(ModelOptions.CUDA).withGpus(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("gpus must be at least 1, got 0");
    }
}
