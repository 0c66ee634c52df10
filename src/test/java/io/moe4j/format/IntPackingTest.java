package io.moe4j.format;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

class IntPackingTest {

    record Values(int bits, int[] values) {}

    @Test
    void offsetBinaryLowestFirst() {
        assertThat(IntPacking.pack(new int[] {-8, 7, 0, 1, -1, 2, 3, 4}, 4))
                .containsExactly(0x0 | 0xF << 4 | 0x8 << 8 | 0x9 << 12 | 0x7 << 16 | 0xA << 20 | 0xB << 24 | 0xC << 28);
        assertThat(IntPacking.pack(new int[] {-128, 127, 0, -1}, 8)).containsExactly(0x7F80FF00);
        assertThat(IntPacking.unpack(0x7F80FF00, 8, 3)).isEqualTo(-1);
        assertThat(IntPacking.unpack(0xC0000000, 4, 7)).isEqualTo(4);
        // A partial last word is zero-filled above its values.
        assertThat(IntPacking.pack(new int[] {0}, 4)).containsExactly(0x8);
    }

    @Test
    void rejectsValuesOutOfRange() {
        assertThatThrownBy(() -> IntPacking.pack(new int[] {8}, 4)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> IntPacking.pack(new int[] {-129}, 8)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> IntPacking.pack(new int[] {0}, 3)).isInstanceOf(IllegalArgumentException.class);
    }

    @Property(tries = 500)
    void packThenUnpackIsIdentity(@ForAll("values") Values v) {
        int[] words = IntPacking.pack(v.values(), v.bits());
        int per = 32 / v.bits();
        assertThat(words).hasSize((v.values().length + per - 1) / per);
        int[] back = new int[v.values().length];
        IntPacking.unpack(words, v.bits(), back.length, back, 0);
        assertThat(back).isEqualTo(v.values());
    }

    @Provide
    Arbitrary<Values> values() {
        return Arbitraries.of(2, 4, 8, 16).flatMap(bits -> Combinators.combine(Arbitraries.just(bits),
                Arbitraries.integers().between(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
                        .array(int[].class).ofMaxSize(70)).as(Values::new));
    }
}
