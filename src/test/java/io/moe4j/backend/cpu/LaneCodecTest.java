package io.moe4j.backend.cpu;

import io.moe4j.format.Bf16;
import io.moe4j.format.ElementFormat;
import io.moe4j.quant.CodeType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/** Lane words hold each code at each slot and give it back; values match the element formats' own decoders. */
class LaneCodecTest {

    @ParameterizedTest
    @EnumSource(LaneCodec.class)
    void everyCodeAtEverySlotRoundTrips(LaneCodec codec) {
        int codes = codec.type() == CodeType.F32 ? 1 << 16 : 1 << Math.min(codec.codeBits(), 16);
        SplittableRandom rnd = new SplittableRandom(3);
        int[] slot = new int[codec.slots()];
        for (int i = 0; i < codes; i++) {
            int code = rawCode(codec, i, rnd);
            for (int j = 0; j < codec.slots(); j++) {
                // The other slots hold random codes, so that a slot leaking into its neighbours shows.
                for (int k = 0; k < slot.length; k++) {
                    slot[k] = rawCode(codec, rnd.nextInt(codes), rnd);
                }
                slot[j] = code;
                int word = codec.pack(slot, 0);
                for (int k = 0; k < slot.length; k++) {
                    assertThat(codec.code(word, k)).as("%s code %x at slot %d, reading slot %d", codec, code, j, k)
                            .isEqualTo(slot[k]);
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(LaneCodec.class)
    void valuesAreTheFormatsValues(LaneCodec codec) {
        SplittableRandom rnd = new SplittableRandom(5);
        for (int i = 0; i < 1000; i++) {
            int code = rawCode(codec, rnd.nextInt(1 << Math.min(codec.codeBits(), 16)), rnd);
            float want = switch (codec.type()) {
                case FP4_E2M1 -> ElementFormat.E2M1.decode(code);
                case FP6_E3M2 -> ElementFormat.E3M2.decode(code);
                case FP6_E2M3 -> ElementFormat.E2M3.decode(code);
                case FP8_E4M3 -> ElementFormat.E4M3FN.decode(code);
                case FP8_E5M2 -> ElementFormat.E5M2.decode(code);
                case F16 -> Float.float16ToFloat((short) code);
                case BF16 -> Bf16.toFloat((short) code);
                case F32 -> Float.intBitsToFloat(code);
                case INT4, INT8 -> code;
            };
            assertThat(Float.floatToIntBits(codec.value(code))).as("%s code %x", codec, code)
                    .isEqualTo(Float.floatToIntBits(want));
        }
    }

    @ParameterizedTest
    @EnumSource(value = LaneCodec.class, names = {"FP8_E4M3", "FP8_E5M2", "F16"})
    void nanAndInfinityCodesAreSpecial(LaneCodec codec) {
        for (int code = 0; code < 1 << codec.codeBits(); code++) {
            float v = switch (codec) {
                case FP8_E4M3 -> ElementFormat.E4M3FN.decode(code);
                case FP8_E5M2 -> ElementFormat.E5M2.decode(code);
                default -> Float.float16ToFloat((short) code);
            };
            assertThat(codec.special(code)).as("%s code %x (%s)", codec, code, v).isEqualTo(!Float.isFinite(v));
        }
    }

    /** The i-th raw code of the codec (signed for the integers, a random bit pattern for F32). */
    private static int rawCode(LaneCodec codec, int i, SplittableRandom rnd) {
        return switch (codec) {
            case INT4 -> (i & 0xF) - 8;
            case INT8 -> (i & 0xFF) - 128;
            case F32 -> rnd.nextInt();
            default -> i & ((1 << codec.codeBits()) - 1);
        };
    }
}
