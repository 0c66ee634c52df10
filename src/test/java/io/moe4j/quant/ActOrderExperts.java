package io.moe4j.quant;

import io.moe4j.format.IntPacking;
import io.moe4j.safetensors.SafetensorsWriter;

import java.util.Random;

/**
 * Test helper: the routed experts of one layer in compressed-tensors {@code pack-quantized} layout with GPTQ
 * act-order (desc_act) group maps, each projection with its own: {@code g_idx[perm[i]] = i / group} for a random
 * column permutation per expert and projection, so gate, up and down order their columns differently. Keeps the raw
 * codes, zero points, scales and maps so a test can dequantize by the formula w = (q − zero) · scale[g_idx[c]].
 * Scales are multiples of 2^-12 below 2^-5 (exact in bf16) so that no rounding stands between the raw values and
 * the checkpoint.
 */
public final class ActOrderExperts {
    /** Projection index: gate_proj, up_proj, down_proj. */
    public static final String[] NAMES = {"gate_proj", "up_proj", "down_proj"};

    public final int experts;
    public final int hidden;
    public final int intermediate;
    public final int bits;
    public final int group;
    public final boolean symmetric;
    /** [expert][projection] row-major [rows·cols] codes, signed. */
    private final int[][][] q;
    /** [expert][projection] row-major [rows·groups] zero points (0 when symmetric). */
    private final int[][][] zp;
    /** [expert][projection] row-major [rows·groups] scales. */
    private final float[][][] sc;
    /** [expert][projection] column → group. */
    public final int[][][] gIdx;

    public ActOrderExperts(int experts, int hidden, int intermediate, int bits, int group, boolean symmetric,
                           long seed) {
        this.experts = experts;
        this.hidden = hidden;
        this.intermediate = intermediate;
        this.bits = bits;
        this.group = group;
        this.symmetric = symmetric;
        Random rnd = new Random(seed);
        q = new int[experts][3][];
        zp = new int[experts][3][];
        sc = new float[experts][3][];
        gIdx = new int[experts][3][];
        int half = 1 << (bits - 1);
        for (int e = 0; e < experts; e++) {
            for (int p = 0; p < 3; p++) {
                int rows = rows(p);
                int cols = cols(p);
                int groups = cols / group;
                q[e][p] = new int[rows * cols];
                for (int i = 0; i < q[e][p].length; i++) {
                    q[e][p][i] = rnd.nextInt(2 * half) - half;
                }
                zp[e][p] = new int[rows * groups];
                sc[e][p] = new float[rows * groups];
                for (int i = 0; i < rows * groups; i++) {
                    zp[e][p][i] = symmetric ? 0 : rnd.nextInt(2 * half) - half;
                    sc[e][p][i] = (1 + rnd.nextInt(127)) / 4096f / (bits == 8 ? 16 : 1);
                }
                int[] perm = permutation(cols, rnd);
                gIdx[e][p] = new int[cols];
                for (int i = 0; i < cols; i++) {
                    gIdx[e][p][perm[i]] = i / group;
                }
            }
        }
    }

    public int rows(int p) {
        return p == 2 ? hidden : intermediate;
    }

    public int cols(int p) {
        return p == 2 ? intermediate : hidden;
    }

    /** Element (r, c) of projection p of expert e by the dequantization formula, in double. */
    public double weight(int e, int p, int r, int c) {
        int groups = cols(p) / group;
        int g = gIdx[e][p][c];
        return (q[e][p][r * cols(p) + c] - zp[e][p][r * groups + g]) * (double) sc[e][p][r * groups + g];
    }

    /** The experts' tensors under {@code prefix} (e.g. "model.layers.0.mlp.experts."). */
    public void write(SafetensorsWriter w, String prefix) {
        for (int e = 0; e < experts; e++) {
            writeExpert(w, prefix + e, e);
        }
    }

    /** Expert e's three projections under {@code module} (e.g. "model.layers.0.mlp.shared_experts"). */
    public void writeExpert(SafetensorsWriter w, String module, int e) {
        int per = 32 / bits;
        for (int p = 0; p < 3; p++) {
            int rows = rows(p);
            int cols = cols(p);
            int groups = cols / group;
            String base = module + "." + NAMES[p] + ".";
            w.addI32(base + "weight_packed", new long[]{rows, cols / per}, IntPacking.pack(q[e][p], bits));
            w.addBf16(base + "weight_scale", new long[]{rows, groups}, sc[e][p]);
            w.addI64(base + "weight_shape", new long[]{2}, new long[]{rows, cols});
            w.addI32(base + "weight_g_idx", new long[]{cols}, gIdx[e][p]);
            if (!symmetric) {
                // Packed along rows: word [r / per, g] holds rows r .. r + per − 1 of group g.
                int[] byGroup = new int[groups * rows];
                for (int r = 0; r < rows; r++) {
                    for (int g = 0; g < groups; g++) {
                        byGroup[g * rows + r] = zp[e][p][r * groups + g];
                    }
                }
                int[] words = new int[rows / per * groups];
                for (int g = 0; g < groups; g++) {
                    int[] packed = IntPacking.pack(java.util.Arrays.copyOfRange(byGroup, g * rows, (g + 1) * rows), bits);
                    for (int k = 0; k < rows / per; k++) {
                        words[k * groups + g] = packed[k];
                    }
                }
                w.addI32(base + "weight_zero_point", new long[]{rows / per, groups}, words);
            }
        }
    }

    /**
     * Expert e's three projections under {@code module} as unquantized f32 {@code weight} tensors holding the
     * dequantized values (exact in f32: an integer below 2^15 times a power of two).
     */
    public void writeDequantized(SafetensorsWriter w, String module, int e) {
        for (int p = 0; p < 3; p++) {
            float[] v = new float[rows(p) * cols(p)];
            for (int r = 0; r < rows(p); r++) {
                for (int c = 0; c < cols(p); c++) {
                    v[r * cols(p) + c] = (float) weight(e, p, r, c);
                }
            }
            w.addF32(module + "." + NAMES[p] + ".weight", new long[]{rows(p), cols(p)}, v);
        }
    }

    /** The compressed-tensors quantization_config of these experts (router and lm_head kept in bf16). */
    public String quantizationConfig() {
        return """
                {"quant_method": "compressed-tensors", "format": "pack-quantized", "quantization_status": "compressed",
                 "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": %d, "type": "int",
                 "symmetric": %s, "group_size": %d, "strategy": "group", "dynamic": false, "actorder": "group",
                 "observer": "minmax"}, "input_activations": null, "format": "pack-quantized"}},
                 "ignore": ["lm_head", "re:.*mlp.gate$", "re:.*self_attn.*"]}""".formatted(bits, symmetric, group);
    }

    /**
     * One expert's output for input x by plain double math: down · (silu(gate · x) ⊙ (up · x)).
     */
    public double[] expert(int e, float[] x, int xOff) {
        double[] h = new double[intermediate];
        for (int r = 0; r < intermediate; r++) {
            double g = 0;
            double u = 0;
            for (int c = 0; c < hidden; c++) {
                g += weight(e, 0, r, c) * x[xOff + c];
                u += weight(e, 1, r, c) * x[xOff + c];
            }
            h[r] = g / (1 + Math.exp(-g)) * u;
        }
        double[] y = new double[hidden];
        for (int r = 0; r < hidden; r++) {
            double s = 0;
            for (int c = 0; c < intermediate; c++) {
                s += weight(e, 2, r, c) * h[c];
            }
            y[r] = s;
        }
        return y;
    }

    private static int[] permutation(int n, Random rnd) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) {
            p[i] = i;
        }
        for (int i = n - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
        return p;
    }
}
