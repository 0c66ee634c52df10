package io.moe4j.backend.cpu;

import io.moe4j.format.E8m0;
import io.moe4j.format.ElementFormat;
import io.moe4j.activation.Activation;
import io.moe4j.activation.GateLayout;
import io.moe4j.routing.Router;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The kernels in plain Java: each panel of {@link PanelMatrix#LANES} rows is decoded from its lane words into exact weight values (block
 * scales and zero points applied), then multiplied with each token. The fallback where the Vector API is missing,
 * and the readable statement of what the vector kernels compute.
 */
final class ScalarKernels implements CpuKernels {
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final int LANES = PanelMatrix.LANES;

    @Override
    public RouterLogits routerLogits(Router router) {
        return new ScalarRouterLogits(router);
    }

    @Override
    public String name() {
        return "scalar";
    }

    @Override
    public Inputs prepare(PanelMatrix m, int expert, float[] x, int xOff, int n) {
        return Inputs.gather(m, expert, x, xOff, n);
    }

    @Override
    public void multiply(PanelMatrix m, int expert, int rowFrom, int rowTo, Inputs in, float[] y, int yOff,
                         int yStride, Scratch s) {
        int padded = in.padded;
        float[] scratch = s.panel;
        for (int p = rowFrom / LANES; p * LANES < rowTo; p++) {
            decodePanel(m, expert, p, scratch);
            for (int lane = 0; lane < LANES; lane++) {
                int r = p * LANES + lane;
                if (r >= rowTo) {
                    break;
                }
                float shard = m.shard() == null ? 1f : m.shard()[(expert * m.panels() + p) * LANES + lane];
                for (int t = 0; t < in.n; t++) {
                    float acc = 0f;
                    int xb = t * padded;
                    for (int c = 0; c < padded; c++) {
                        acc += scratch[c * LANES + lane] * in.x[xb + c];
                    }
                    y[yOff + t * yStride + r] = acc * shard;
                }
            }
        }
    }

    /** scratch[c·LANES + lane] = (value − zero) · scale of packed column c of row p·LANES + lane (shard scale not applied). */
    static void decodePanel(PanelMatrix m, int expert, int p, float[] scratch) {
        LaneCodec codec = m.codec();
        ColumnPlan plan = m.plan(expert);
        int slots = codec.slots();
        for (int g = 0; g < plan.segments(); g++) {
            for (int lane = 0; lane < LANES; lane++) {
                float scale = 1f;
                float zero = 0f;
                if (m.scales() != null) {
                    long idx = m.scaleIndex(expert, p, g) + lane;
                    scale = scale(m, idx);
                    if (m.zeros() != null) {
                        zero = m.zeros().get(ValueLayout.JAVA_BYTE, idx);
                    }
                }
                for (int w = plan.segmentWords()[g]; w < plan.segmentWords()[g + 1]; w++) {
                    int word = m.words().get(INT, m.wordOffset(expert, p, w) + 4L * lane);
                    for (int j = 0; j < slots; j++) {
                        float v = codec.value(codec.code(word, j));
                        scratch[(w * slots + j) * LANES + lane] = (v - zero) * scale;
                    }
                }
            }
        }
    }

    /** The block scale at scale index idx of m. */
    static float scale(PanelMatrix m, long idx) {
        return switch (m.scaleType()) {
            case E8M0 -> E8m0.decode(m.scales().get(ValueLayout.JAVA_BYTE, idx));
            case E4M3 -> ElementFormat.E4M3FN.decode(m.scales().get(ValueLayout.JAVA_BYTE, idx) & 0xFF);
            case F32 -> m.scales().get(F32, 4 * idx);
        };
    }

    @Override
    public void addScaled(float scale, float[] y, int yOff, float[] out, int outOff, int n) {
        for (int i = 0; i < n; i++) {
            out[outOff + i] += scale * y[yOff + i];
        }
    }

    @Override
    public void activate(Activation activation, GateLayout layout, float limit, int intermediate, float[] h, int hOff,
                         float[] out, int outOff) {
        for (int j = 0; j < intermediate; j++) {
            double v = switch (layout) {
                case NONE -> activation.plain(h[hOff + j]);
                case INTERLEAVED -> activation.gated(h[hOff + 2 * j], h[hOff + 2 * j + 1], limit);
                case CONCATENATED -> activation.gated(h[hOff + j], h[hOff + intermediate + j], limit);
            };
            out[outOff + j] = (float) v;
        }
    }
}
