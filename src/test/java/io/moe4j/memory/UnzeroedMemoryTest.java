package io.moe4j.memory;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.assertj.core.api.Assertions.assertThat;

/** Memory handed out whole and aligned, every byte writable, freed with its arena; huge pages aligned where hinted. */
class UnzeroedMemoryTest {

    @Test
    void smallAndHugeBuffersHoldWhatIsWrittenAndCloseWithTheirArena() {
        long[] sizes = {1, 100, 4096 + 3, UnzeroedMemory.HUGE_PAGE - 1, UnzeroedMemory.HUGE_PAGE + 5};
        MemorySegment[] kept = new MemorySegment[sizes.length];
        try (Arena arena = Arena.ofShared()) {
            for (int i = 0; i < sizes.length; i++) {
                MemorySegment m = UnzeroedMemory.allocate(arena, sizes[i], 64);
                kept[i] = m;
                assertThat(m.byteSize()).isEqualTo(sizes[i]);
                assertThat(m.address() % 64).as("%d bytes aligned to 64", sizes[i]).isZero();
                if (sizes[i] >= UnzeroedMemory.HUGE_PAGE && UnzeroedMemory.hintsHugePages()) {
                    assertThat(m.address() % UnzeroedMemory.HUGE_PAGE).as("huge-page aligned").isZero();
                }
                for (long b = 0; b < sizes[i]; b++) {
                    m.set(ValueLayout.JAVA_BYTE, b, (byte) (b * 31 + i));
                }
                for (long b = 0; b < sizes[i]; b++) {
                    assertThat(m.get(ValueLayout.JAVA_BYTE, b)).isEqualTo((byte) (b * 31 + i));
                }
            }
        }
        for (MemorySegment m : kept) {
            assertThat(m.scope().isAlive()).as("freed with the arena").isFalse();
        }
    }
}
