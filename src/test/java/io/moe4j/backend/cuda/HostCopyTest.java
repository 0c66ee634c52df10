package io.moe4j.backend.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

class HostCopyTest {

    @Test
    void bothDirectionsKeepEveryFloatInPlaceAcrossPieceBoundaries() {
        for (int n : new int[] {0, 7, HostCopy.PARALLEL_FROM - 1, HostCopy.PARALLEL_FROM,
                HostCopy.PARALLEL_FROM + HostCopy.PIECE + 3}) {
            float[] src = new float[n];
            for (int i = 0; i < n; i++) {
                src[i] = i * 0.5f - 3f;
            }
            try (Arena arena = Arena.ofShared()) { // the staging memory is reachable from any thread, like pinned memory
                MemorySegment seg = arena.allocate(4L * n + 4, 16);
                seg.set(ValueLayout.JAVA_FLOAT, 4L * n, 42f); // the float past the end stays
                HostCopy.toSegment(src, seg, n);
                assertThat(seg.asSlice(0, 4L * n).toArray(ValueLayout.JAVA_FLOAT)).isEqualTo(src);
                assertThat(seg.get(ValueLayout.JAVA_FLOAT, 4L * n)).isEqualTo(42f);
                float[] back = new float[n + 1];
                back[n] = -1f;
                HostCopy.fromSegment(seg, back, n);
                assertThat(java.util.Arrays.copyOf(back, n)).isEqualTo(src);
                assertThat(back[n]).isEqualTo(-1f);
            }
        }
    }
}
