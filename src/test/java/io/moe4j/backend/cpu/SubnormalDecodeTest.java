package io.moe4j.backend.cpu;

import io.moe4j.format.ElementFormat;
import io.moe4j.quant.ScaleType;
import io.moe4j.routing.Router;
import io.moe4j.routing.RouterKind;
import io.moe4j.routing.RouterSpec;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorSpecies;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.BiFunction;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * No decode step of the vector kernels yields a float subnormal: every code of every codec, at every slot of a lane
 * word, goes through the {@link SlotDecode} method the kernels call and must come out as a normal float or zero (and
 * as the code's value·2^-bias, to the bit). Intel cores run float operations on subnormal operands 50-100x slower;
 * this is the check that runs on any CPU. Also the block scales' decode and the router's weights.
 */
class SubnormalDecodeTest {
    // The kernels' own shape (256 or 512 bits, -Dmoe4j.cpu.vectorBits): the surefire runs cover both.
    private static final VectorSpecies<Integer> I = VectorShapes.I;
    private static final int LANES = PanelMatrix.LANES;

    /** Whether v is a float the kernels may compute with: normal, or zero of either sign. */
    static boolean normalOrZero(float v) {
        return Math.getExponent(v) != Float.MIN_EXPONENT - 1 || v == 0f;
    }

    /**
     * The kernels' decode of slot j of the words in w, per codec; FP4 by the lookup this machine uses, FP6 and FP8
     * by the lookups of {@link PermuteDecode}'s tables where {@link BytePermutes#FAST} (512-bit kernels with AVX-512
     * VBMI, or forced by its property), else by the minifloat step: surefire's 256-bit and {@code -XX:UseAVX=2} runs
     * take the minifloat step on any machine, its default and 512-bit runs the lookups on a VBMI machine.
     */
    private static FloatVector decode(LaneCodec codec, IntVector w, int j) {
        return switch (codec) {
            case FP4 -> SlotDecode.fp4(w, j);
            case FP6_E3M2 -> SlotDecode.fp6E3m2(w, j);
            case FP6_E2M3 -> SlotDecode.fp6E2m3(w, j);
            case FP8_E4M3 -> SlotDecode.fp8E4m3(w, j);
            case FP8_E5M2 -> SlotDecode.fp8E5m2(w, j);
            case F16 -> SlotDecode.f16(w, j);
            case INT4 -> SlotDecode.int4(w, j);
            case INT8 -> SlotDecode.int8(w, j);
            case BF16 -> SlotDecode.bf16(w, j);
            // F32 has no decode step: the packed word is the float.
            case F32 -> w.reinterpretAsFloats();
        };
    }

    @ParameterizedTest
    @EnumSource(LaneCodec.class)
    void everyCodeAtEverySlotDecodesToANormalFloatOrZero(LaneCodec codec) {
        assertEveryCode(codec, (w, j) -> decode(codec, w, j));
    }

    /** Both FP4 lookups, whichever this machine's kernels use: the other one runs on other machines. */
    @Test
    void bothFp4LookupsDecodeEveryCodeToANormalFloatOrZero() {
        assertEveryCode(LaneCodec.FP4, (w, j) -> SlotDecode.fp4Wide(j == 0 ? w : w.lanewise(
                jdk.incubator.vector.VectorOperators.LSHR, 4 * j)));
        assertEveryCode(LaneCodec.FP4, (w, j) -> SlotDecode.fp4Narrow(j == 0 ? w : w.lanewise(
                jdk.incubator.vector.VectorOperators.LSHR, 4 * j)));
    }

    /**
     * Every code of the codec (all of them up to 16 bits; for F32 the subnormal range's edges and random patterns) at
     * every slot, eight codes a vector, the other slots holding random codes: the decoded lane is normal or zero and
     * is the packed code's value times 2^-bias, to the bit.
     */
    private static void assertEveryCode(LaneCodec codec, BiFunction<IntVector, Integer, FloatVector> decoder) {
        SplittableRandom rnd = new SplittableRandom(27);
        int[] all = codes(codec, rnd);
        int slots = codec.slots();
        int[] slot = new int[slots];
        int[] words = new int[LANES];
        int[] packed = new int[LANES];
        List<String> subnormal = new ArrayList<>();
        List<String> wrong = new ArrayList<>();
        for (int first = 0; first < all.length; first += LANES) {
            for (int j = 0; j < slots; j++) {
                for (int lane = 0; lane < LANES; lane++) {
                    for (int k = 0; k < slots; k++) {
                        slot[k] = codec.normalCode(all[rnd.nextInt(all.length)]);
                    }
                    int code = all[Math.min(first + lane, all.length - 1)];
                    packed[lane] = codec.normalCode(code);
                    slot[j] = packed[lane];
                    words[lane] = codec.pack(slot, 0);
                }
                FloatVector v = decoder.apply(IntVector.fromArray(I, words, 0), j);
                for (int lane = 0; lane < LANES; lane++) {
                    float got = v.lane(lane);
                    int code = packed[lane];
                    if (!normalOrZero(got)) {
                        subnormal.add(String.format("code 0x%X slot %d -> %s", code, j, got));
                    }
                    // The integers decode to p = code + offset (the kernels subtract the offset later).
                    float value = codec.offset() == 0 ? codec.value(code) : code + codec.offset();
                    float want = Math.scalb(value, -codec.bias());
                    if (Float.floatToRawIntBits(got) != Float.floatToRawIntBits(want)) {
                        wrong.add(String.format("code 0x%X slot %d -> %s, want %s", code, j, got, want));
                    }
                }
            }
        }
        assertThat(subnormal).as("%s codes whose decode is a subnormal float", codec).isEmpty();
        assertThat(wrong).as("%s codes decoded to another value", codec).isEmpty();
    }

    /** The raw codes to try: every finite code up to 16 bits (signed for the integers); for F32 a selection. */
    private static int[] codes(LaneCodec codec, SplittableRandom rnd) {
        List<Integer> list = new ArrayList<>();
        if (codec == LaneCodec.F32) {
            for (int e : new int[] {0, 1, 2, 254}) {
                for (int m : new int[] {0, 1, 2, 0x400000, 0x7FFFFE, 0x7FFFFF}) {
                    list.add(e << 23 | m);
                    list.add(0x80000000 | e << 23 | m);
                }
            }
            for (int i = 0; i < 4096; i++) {
                int c = rnd.nextInt();
                if ((c & 0x7F800000) != 0x7F800000) {
                    list.add(c);
                }
            }
        } else {
            int n = 1 << codec.codeBits();
            for (int i = 0; i < n; i++) {
                int code = switch (codec) {
                    case INT4 -> (i & 0xF) - 8;
                    case INT8 -> (i & 0xFF) - 128;
                    default -> i;
                };
                boolean bf16Special = codec == LaneCodec.BF16 && (code & 0x7F80) == 0x7F80;
                if (!codec.special(code) && !bf16Special) {
                    list.add(code);
                }
            }
        }
        return list.stream().mapToInt(Integer::intValue).toArray();
    }

    /**
     * The intermediate floats of {@link SlotDecode#minifloat}, in scalar form, for every magnitude of every
     * minifloat codec: A = magnitude | 2^64, 2A - H and the result min(2A - H, A) are all normal or zero (the vector
     * test above sees only the result).
     */
    @ParameterizedTest
    @EnumSource(value = LaneCodec.class, names = {"FP6_E3M2", "FP6_E2M3", "FP8_E4M3", "FP8_E5M2", "F16"})
    void minifloatIntermediatesAreNormal(LaneCodec codec) {
        int bits = codec.magnitudeBits();
        int mantissa = switch (codec) {
            case FP6_E3M2, FP8_E5M2 -> 2;
            case FP6_E2M3, FP8_E4M3 -> 3;
            default -> 10;
        };
        for (int mag = 0; mag < 1 << bits; mag++) {
            if (codec.special(mag)) {
                continue;
            }
            float a = Float.intBitsToFloat(mag << (23 - mantissa) | LaneCodec.MINIFLOAT_BASE);
            float d = Math.fma(a, 2f, -LaneCodec.MINIFLOAT_HALF);
            float w = Math.min(d, a);
            assertThat(List.of(a, d, w)).as("%s magnitude 0x%X", codec, mag)
                    .allMatch(SubnormalDecodeTest::normalOrZero);
        }
    }

    /** Every E4M3 block scale decodes to its value, a normal float (E4M3's subnormals are normal in float32). */
    @Test
    void e4m3ScalesDecodeToNormalFloats() {
        float[] out = decodeScales(ScaleType.E4M3);
        for (int code = 0; code < 256; code++) {
            float want = ElementFormat.E4M3FN.decode(code);
            if (Float.isNaN(want)) {
                assertThat(out[code]).as("E4M3 scale 0x%X", code).isNaN();
                continue;
            }
            assertThat(normalOrZero(out[code])).as("E4M3 scale 0x%X -> %s", code, out[code]).isTrue();
            assertThat(Float.floatToRawIntBits(out[code])).as("E4M3 scale 0x%X", code)
                    .isEqualTo(Float.floatToRawIntBits(want));
        }
    }

    /**
     * E8M0 scales 1..254 are normal floats; byte 0 is 2^-127, a subnormal by value (no normal float holds it), so a
     * matrix with it takes the decoded-scale path ({@link PanelMatrix#plainE8m0}).
     */
    @Test
    void e8m0ScalesOneTo254DecodeToNormalFloats() {
        float[] out = decodeScales(ScaleType.E8M0);
        for (int code = 1; code < 255; code++) {
            assertThat(normalOrZero(out[code])).as("E8M0 scale %d -> %s", code, out[code]).isTrue();
            assertThat(out[code]).isEqualTo(Math.scalb(1f, code - 127));
        }
    }

    /** VectorScales on one panel whose 256 / LANES segments hold the bytes 0..255 (segment g, lane l: LANES·g + l). */
    private static float[] decodeScales(ScaleType type) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment scales = arena.allocate(256);
            for (int i = 0; i < 256; i++) {
                scales.set(ValueLayout.JAVA_BYTE, i, (byte) i);
            }
            PanelMatrix m = new PanelMatrix(null, LaneCodec.FP4, 1, 0, null, 256 / LANES, null, type, scales, null, null,
                    false);
            float[] out = new float[256];
            VectorScales.scales(m, 0, 0, out);
            return out;
        }
    }

    /**
     * A router row holding subnormal weights is scaled by a power of two in the copy the kernels read, and the
     * logits stay those of the unscaled row in the lane order, to the bit, on both kernel sets.
     */
    @Test
    void routerWeightsHoldNoSubnormalsAndTheLogitsAreUnchanged() {
        int experts = 6;
        int hidden = 37;
        SplittableRandom rnd = new SplittableRandom(11);
        float[] w = new float[experts * hidden];
        for (int i = 0; i < w.length; i++) {
            w[i] = (float) (rnd.nextGaussian() * 0.05);
        }
        // Expert 1: a few subnormals among normal weights; expert 3: only subnormals and zeros; expert 4: a
        // row from 2^120 down to 2^-149, which 2^7 can only partly lift: its 2^-149 is dropped, 2^-130 kept.
        w[hidden + 2] = Float.MIN_VALUE;
        w[hidden + 30] = -0x1p-140f;
        for (int c = 0; c < hidden; c++) {
            w[3 * hidden + c] = c % 3 == 0 ? 0f : Math.scalb((float) rnd.nextGaussian(), -135);
        }
        w[4 * hidden] = 0x1p120f;
        w[4 * hidden + 1] = -Float.MIN_VALUE;
        w[4 * hidden + 2] = 0x1p-130f;
        Router router = new Router(RouterSpec.simple(RouterKind.TOPK_SOFTMAX, experts, 2, false), hidden, w,
                null, null);
        float[] x = new float[3 * hidden];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) rnd.nextGaussian();
        }
        List<RouterLogits> kernels = new ArrayList<>(List.of(new ScalarRouterLogits(router)));
        if (KernelSelection.vectorUnavailable(IntVector.SPECIES_PREFERRED.vectorBitSize()).isEmpty()) {
            kernels.add(new VectorRouterLogits(router));
        }
        for (RouterLogits logits : kernels) {
            for (float v : logits.weight) {
                assertThat(normalOrZero(v)).as("%s router weight %s", logits.name(), v).isTrue();
            }
            double[] out = new double[3 * experts];
            logits.compute(x, 3, out);
            for (int t = 0; t < 3; t++) {
                for (int e = 0; e < experts; e++) {
                    if (e == 4) {
                        continue;
                    }
                    assertThat(out[t * experts + e]).as("%s logit of token %d, expert %d", logits.name(), t, e)
                            .isEqualTo(laneOrder(w, e * hidden, x, t * hidden, hidden));
                }
            }
            // Expert 4: the row was scaled by 2^7 (2^120 may go no higher), which leaves -2^-149 subnormal, so it
            // became -0; 2^-130 became the normal 2^-123.
            float[] kept = w.clone();
            kept[4 * hidden + 1] = -0f;
            assertThat(out[4]).isEqualTo(laneOrder(kept, 4 * hidden, x, 0, hidden));
        }
    }

    /** RouterLogits's lane order over the original weights, in float64 (the definition). */
    private static double laneOrder(float[] w, int row, float[] x, int xOff, int hidden) {
        double[] s = new double[4];
        int whole = hidden & -4;
        for (int c = 0; c < whole; c++) {
            s[c & 3] += (double) w[row + c] * x[xOff + c];
        }
        double acc = ((s[0] + s[1]) + s[2]) + s[3];
        for (int c = whole; c < hidden; c++) {
            acc += (double) w[row + c] * x[xOff + c];
        }
        return acc;
    }
}
