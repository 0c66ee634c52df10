package io.moe4j.quant;

import io.moe4j.quant.ActivationQuant;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.method.GptOssMxfp4Method;
import io.moe4j.safetensors.Tensor;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;

import static org.assertj.core.api.Assertions.assertThat;

class GptOssMxfp4MethodTest {
    static final float[] E2M1 = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};

    /** Element (e, r, c) of a gpt-oss *_blocks / *_scales pair, decoded by hand. */
    static float element(Tensor blocks, Tensor scales, int e, int r, int c) {
        long[] s = blocks.shape();
        long rows = s[1];
        long nb = s[2];
        long byteAt = ((e * rows + r) * nb + c / 32) * 16 + (c % 32) / 2;
        int b = blocks.segment().get(ValueLayout.JAVA_BYTE, byteAt) & 0xFF;
        int code = (c % 2 == 0) ? b & 0xF : b >>> 4;
        int scale = scales.segment().get(ValueLayout.JAVA_BYTE, (e * rows + r) * nb + c / 32) & 0xFF;
        return E2M1[code] * (float) Math.pow(2, scale - 127);
    }

    @Test
    void mxfp4StacksAreTheCheckpointBytesAndDecodeExactly() {
        try (var c = Cases.open("gptoss_mxfp4"); Arena arena = Arena.ofConfined()) {
            assertThat(c.method()).isInstanceOf(GptOssMxfp4Method.class);
            ExpertWeights w = c.load(arena);
            assertThat(w.scheme().name()).isEqualTo("gpt-oss mxfp4");
            assertThat(w.scheme().weights()).isEqualTo(WeightFormat.MXFP4);
            assertThat(w.gateLayout()).isEqualTo(GateLayout.INTERLEAVED);
            assertThat(w.a13()).isEqualTo(ActivationQuant.NONE);
            Tensor b13 = c.checkpoint().tensor("model.layers.0.mlp.experts.gate_up_proj_blocks");
            Tensor s13 = c.checkpoint().tensor("model.layers.0.mlp.experts.gate_up_proj_scales");
            Tensor b2 = c.checkpoint().tensor("model.layers.0.mlp.experts.down_proj_blocks");
            Tensor s2 = c.checkpoint().tensor("model.layers.0.mlp.experts.down_proj_scales");
            // zero-copy: the stacks are the mapped checkpoint bytes
            assertThat(w.w13().data().address()).isEqualTo(b13.segment().address());
            assertThat(w.w2().blockScales().data().address()).isEqualTo(s2.segment().address());
            for (int e : new int[]{0, 5, 7}) {
                for (int r : new int[]{0, 1, 77, 127}) {
                    float[] row = Dequant.row(w.w13(), e, r);
                    for (int col = 0; col < w.hidden(); col++) {
                        assertThat(row[col]).isEqualTo(element(b13, s13, e, r, col));
                    }
                    float[] down = Dequant.row(w.w2(), e, r);
                    for (int col = 0; col < w.intermediate(); col++) {
                        assertThat(down[col]).isEqualTo(element(b2, s2, e, r, col));
                    }
                }
            }
            Tensor bias = c.checkpoint().tensor("model.layers.0.mlp.experts.down_proj_bias");
            assertThat(w.w2Bias()[5 * 128 + 17]).isEqualTo(bias.getFloat(5 * 128 + 17));
        }
    }

    @Test
    void expertParallelContiguousIsASliceAndScatteredIsACopy() {
        try (var c = Cases.open("gptoss_mxfp4"); Arena arena = Arena.ofConfined()) {
            Tensor b13 = c.checkpoint().tensor("model.layers.0.mlp.experts.gate_up_proj_blocks");
            Tensor s13 = c.checkpoint().tensor("model.layers.0.mlp.experts.gate_up_proj_scales");
            ExpertWeights run = c.load(arena, 4, 5, 6, 7);
            assertThat(run.numExperts()).isEqualTo(4);
            assertThat(run.expertMap()).containsExactly(-1, -1, -1, -1, 0, 1, 2, 3);
            assertThat(run.w13().data().address()).isEqualTo(b13.segment().address() + 4 * b13.segment().byteSize() / 8);
            ExpertWeights scattered = c.load(arena, 6, 1);
            assertThat(scattered.localExpert(6)).isEqualTo(0);
            assertThat(scattered.localExpert(1)).isEqualTo(1);
            assertThat(scattered.localExpert(0)).isEqualTo(-1);
            assertThat(scattered.globalExperts()).isEqualTo(8);
            float[] row = Dequant.row(scattered.w13(), 1, 9);
            for (int col = 0; col < 128; col++) {
                assertThat(row[col]).isEqualTo(element(b13, s13, 1, 9, col));
            }
            assertThat(scattered.w13Bias()).hasSize(2 * 128);
        }
    }
}
