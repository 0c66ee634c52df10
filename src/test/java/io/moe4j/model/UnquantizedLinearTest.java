package io.moe4j.model;

import io.moe4j.MoeException;
import io.moe4j.format.Bf16;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.SafetensorsWriter;
import io.moe4j.model.linear.Linear;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Random;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The unquantized linear on odd sizes, every float dtype, both forms, against a float64 product. */
class UnquantizedLinearTest {
    static final int IN = 37;
    static final int OUT = 131;
    static final int TOKENS = 29; // enough work per call that the rows spread over the threads

    static float[] random(Random r, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) r.nextGaussian();
        }
        return v;
    }

    static byte[] f16(float[] v) {
        ByteBuffer b = ByteBuffer.allocate(2 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : v) {
            b.putShort(Float.floatToFloat16(f));
        }
        return b.array();
    }

    @Test
    void everyDtypeAndBothFormsMatchAFloat64Product(@TempDir Path tmp) {
        Random r = new Random(7);
        float[] w = random(r, OUT * IN);
        for (int i = 0; i < w.length; i++) {
            w[i] = Bf16.round(w[i]); // representable in every dtype below, so all three hold the same matrix
        }
        float[] bias = random(r, OUT);
        float[] x = random(r, TOKENS * IN);
        x[5] = Float.MIN_VALUE * 3; // a subnormal input is flushed, not multiplied
        Path file = tmp.resolve("w.safetensors");
        new SafetensorsWriter().addBf16("a.weight", new long[] {OUT, IN}, w).addF32("b.weight", new long[] {OUT, IN}, w)
                .add("c.weight", DType.F16, new long[] {OUT, IN}, f16(w)).addF32("a.bias", new long[] {OUT}, bias)
                .addF32("b.bias", new long[] {OUT}, bias).addF32("c.bias", new long[] {OUT}, bias).write(file);
        float[] want = new float[TOKENS * OUT];
        for (int t = 0; t < TOKENS; t++) {
            for (int o = 0; o < OUT; o++) {
                double s = bias[o];
                for (int i = 0; i < IN; i++) {
                    s += (double) x[t * IN + i] * w[o * IN + i];
                }
                want[t * OUT + o] = (float) s;
            }
        }
        try (Checkpoint ckpt = Checkpoint.open(file); Parallel threads = new Parallel(2)) {
            for (Parallel p : new Parallel[] {null, threads}) {
                UnquantizedLinears factory = new UnquantizedLinears(ckpt, p);
                for (String module : new String[] {"a", "b", "c"}) {
                    Linear linear = factory.load(module, IN, OUT, true);
                    float[] y = new float[TOKENS * OUT];
                    linear.forward(x, TOKENS, y);
                    assertThat(relL2(y, want)).as("%s, %s", module, linear.describe()).isLessThan(1e-6);
                }
            }
        }
    }

    @Test
    void aQuantizedModuleIsRefusedByName(@TempDir Path tmp) {
        Path file = tmp.resolve("w.safetensors");
        new SafetensorsWriter().add("q.weight", DType.F8_E4M3, new long[] {2, 2}, new byte[4])
                .addF32("q.weight_scale", new long[] {1}, new float[] {1f}).write(file);
        try (Checkpoint ckpt = Checkpoint.open(file)) {
            assertThatThrownBy(() -> new UnquantizedLinears(ckpt, null).load("q", 2, 2, false))
                    .isInstanceOf(MoeException.class).hasMessageContaining("'q'").hasMessageContaining("q.weight_scale");
        }
    }
}
