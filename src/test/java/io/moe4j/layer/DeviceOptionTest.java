package io.moe4j.layer;

import io.moe4j.backend.ExecutionOptions;
import io.moe4j.backend.KernelActivations;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The device a layer is placed on: kept by every {@code with} of the options, passed to the backend, never negative. */
class DeviceOptionTest {
    @Test
    void theDeviceSurvivesEveryOtherOptionAndReachesTheBackend() {
        MoeLayerOptions o = MoeLayerOptions.defaults().withDevice(3).withBackend("cuda").withThreads(2)
                .withLocalExperts(new int[] {1, 3}).withSharedExperts(SharedExperts.ADD).withPlatform(null)
                .withWorkers(null).withKernelActivations(KernelActivations.INT8);
        assertThat(o.device()).isEqualTo(3);
        assertThat(MoeLayerOptions.defaults().device()).isZero();
        assertThat(new ExecutionOptions(2).onDevice(1).device()).isEqualTo(1);
        assertThat(new ExecutionOptions(2).device()).isZero();
    }

    @Test
    void aNegativeDeviceIsRefused() {
        assertThatThrownBy(() -> MoeLayerOptions.defaults().withDevice(-1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("device must be a device ordinal");
        assertThatThrownBy(() -> new ExecutionOptions(2).onDevice(-2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("got -2");
    }
}
