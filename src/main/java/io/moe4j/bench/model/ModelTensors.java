package io.moe4j.bench.model;

import io.moe4j.bench.model.TensorSpec.Role;
import io.moe4j.safetensors.DType;

import java.util.ArrayList;
import java.util.List;

/**
 * The tensors of a synthetic model in its family's hub layout and scheme, one shard each for the embedding, every
 * layer, and the final norm with lm_head. Weights are scaled so that a linear's outputs stay near the size of its
 * inputs (1/sqrt(fan-in)), so the hidden states keep ordinary magnitudes through many layers.
 */
final class ModelTensors {
    /** The hub's FP8 block size. */
    static final int FP8_BLOCK = 128;
    /** Static FP8 input scale of the compressed-tensors scheme: inputs up to 448/32 = 14 are represented. */
    static final float INPUT_SCALE = 1f / 32;
    /** Mean square of E4M3 codes with exponent fields 5..8 (Fill.Fp8Codes), to turn codes into unit-size weights. */
    private static final double FP8_CODE_RMS = 1.6;
    /** Root mean square of the FP4 (E2M1) values of uniformly random nibbles. */
    private static final double FP4_CODE_RMS = 2.9;

    private ModelTensors() {
    }

    /** The shards in order: embedding, each layer, then final norm and lm_head. */
    static List<List<TensorSpec>> shards(ModelShape s) {
        List<List<TensorSpec>> shards = new ArrayList<>();
        shards.add(List.of(new TensorSpec("model.embed_tokens.weight", DType.BF16, new long[] {s.vocab(), s.hidden()},
                new Fill.Bf16Random(1f), Role.EMBEDDING)));
        for (int l = 0; l < s.layers(); l++) {
            List<TensorSpec> t = new ArrayList<>();
            String p = "model.layers." + l + ".";
            t.add(norm(p + "input_layernorm.weight", s.hidden()));
            t.add(norm(p + "post_attention_layernorm.weight", s.hidden()));
            switch (s.family()) {
                case GPT_OSS -> gptOss(t, p, s);
                case QWEN3_MOE -> qwen3(t, p, s);
                case MIXTRAL -> mixtral(t, p, s);
                case DEEPSEEK_V3 -> deepseek(t, p, s, l);
            }
            shards.add(List.copyOf(t));
        }
        shards.add(List.of(norm("model.norm.weight", s.hidden()),
                new TensorSpec("lm_head.weight", DType.BF16, new long[] {s.vocab(), s.hidden()},
                        bf16Weights(s.hidden()), Role.LM_HEAD)));
        return shards;
    }

    private static void gptOss(List<TensorSpec> t, String p, ModelShape s) {
        int h = s.hidden();
        int q = s.heads() * s.headDim();
        int kv = s.kvHeads() * s.headDim();
        String a = p + "self_attn.";
        bf16Linear(t, a + "q_proj", q, h, true, Role.ATTENTION);
        bf16Linear(t, a + "k_proj", kv, h, true, Role.ATTENTION);
        bf16Linear(t, a + "v_proj", kv, h, true, Role.ATTENTION);
        bf16Linear(t, a + "o_proj", h, q, true, Role.ATTENTION);
        t.add(new TensorSpec(a + "sinks", DType.BF16, new long[] {s.heads()}, new Fill.Bf16Random(1f), Role.ATTENTION));
        bf16Linear(t, p + "mlp.router", s.experts(), h, true, Role.DENSE);
        int e = s.experts();
        int i = s.moeIntermediate();
        String x = p + "mlp.experts.";
        t.add(new TensorSpec(x + "gate_up_proj_blocks", DType.U8, new long[] {e, 2L * i, h / 32, 16},
                new Fill.RandomBytes(), Role.EXPERTS));
        t.add(new TensorSpec(x + "gate_up_proj_scales", DType.U8, new long[] {e, 2L * i, h / 32},
                new Fill.ByteConst(e8m0(h)), Role.EXPERTS));
        t.add(new TensorSpec(x + "gate_up_proj_bias", DType.BF16, new long[] {e, 2L * i}, bias(), Role.EXPERTS));
        t.add(new TensorSpec(x + "down_proj_blocks", DType.U8, new long[] {e, h, i / 32, 16},
                new Fill.RandomBytes(), Role.EXPERTS));
        t.add(new TensorSpec(x + "down_proj_scales", DType.U8, new long[] {e, h, i / 32},
                new Fill.ByteConst(e8m0(i)), Role.EXPERTS));
        t.add(new TensorSpec(x + "down_proj_bias", DType.BF16, new long[] {e, h}, bias(), Role.EXPERTS));
    }

    private static void qwen3(List<TensorSpec> t, String p, ModelShape s) {
        int h = s.hidden();
        int q = s.heads() * s.headDim();
        int kv = s.kvHeads() * s.headDim();
        String a = p + "self_attn.";
        t.add(norm(a + "q_norm.weight", s.headDim()));
        t.add(norm(a + "k_norm.weight", s.headDim()));
        fp8Block(t, a + "q_proj", q, h, Role.ATTENTION);
        fp8Block(t, a + "k_proj", kv, h, Role.ATTENTION);
        fp8Block(t, a + "v_proj", kv, h, Role.ATTENTION);
        fp8Block(t, a + "o_proj", h, q, Role.ATTENTION);
        bf16Linear(t, p + "mlp.gate", s.experts(), h, false, Role.DENSE);
        for (int e = 0; e < s.experts(); e++) {
            String x = p + "mlp.experts." + e + ".";
            fp8Block(t, x + "gate_proj", s.moeIntermediate(), h, Role.EXPERTS);
            fp8Block(t, x + "up_proj", s.moeIntermediate(), h, Role.EXPERTS);
            fp8Block(t, x + "down_proj", h, s.moeIntermediate(), Role.EXPERTS);
        }
    }

    private static void mixtral(List<TensorSpec> t, String p, ModelShape s) {
        int h = s.hidden();
        int q = s.heads() * s.headDim();
        int kv = s.kvHeads() * s.headDim();
        String a = p + "self_attn.";
        fp8Tensor(t, a + "q_proj", q, h, Role.ATTENTION);
        fp8Tensor(t, a + "k_proj", kv, h, Role.ATTENTION);
        fp8Tensor(t, a + "v_proj", kv, h, Role.ATTENTION);
        fp8Tensor(t, a + "o_proj", h, q, Role.ATTENTION);
        bf16Linear(t, p + "block_sparse_moe.gate", s.experts(), h, false, Role.DENSE);
        for (int e = 0; e < s.experts(); e++) {
            String x = p + "block_sparse_moe.experts." + e + ".";
            fp8Tensor(t, x + "w1", s.moeIntermediate(), h, Role.EXPERTS);
            fp8Tensor(t, x + "w2", h, s.moeIntermediate(), Role.EXPERTS);
            fp8Tensor(t, x + "w3", s.moeIntermediate(), h, Role.EXPERTS);
        }
    }

    private static void deepseek(List<TensorSpec> t, String p, ModelShape s, int layer) {
        int h = s.hidden();
        ModelShape.Mla m = s.mla();
        int heads = s.heads();
        String a = p + "self_attn.";
        fp8Block(t, a + "q_a_proj", m.qLoraRank(), h, Role.ATTENTION);
        t.add(norm(a + "q_a_layernorm.weight", m.qLoraRank()));
        fp8Block(t, a + "q_b_proj", heads * (m.nopeDim() + m.ropeDim()), m.qLoraRank(), Role.ATTENTION);
        fp8Block(t, a + "kv_a_proj_with_mqa", m.kvLoraRank() + m.ropeDim(), h, Role.ATTENTION);
        t.add(norm(a + "kv_a_layernorm.weight", m.kvLoraRank()));
        fp8Block(t, a + "kv_b_proj", heads * (m.nopeDim() + m.vDim()), m.kvLoraRank(), Role.ATTENTION);
        fp8Block(t, a + "o_proj", h, heads * m.vDim(), Role.ATTENTION);
        String mlp = p + "mlp.";
        if (!s.isMoe(layer)) {
            fp8Block(t, mlp + "gate_proj", s.denseIntermediate(), h, Role.DENSE);
            fp8Block(t, mlp + "up_proj", s.denseIntermediate(), h, Role.DENSE);
            fp8Block(t, mlp + "down_proj", h, s.denseIntermediate(), Role.DENSE);
            return;
        }
        bf16Linear(t, mlp + "gate", s.experts(), h, false, Role.DENSE);
        t.add(new TensorSpec(mlp + "gate.e_score_correction_bias", DType.F32, new long[] {s.experts()},
                new Fill.F32Random(0.01f), Role.DENSE));
        for (int e = 0; e < s.experts(); e++) {
            String x = mlp + "experts." + e + ".";
            fp8Block(t, x + "gate_proj", s.moeIntermediate(), h, Role.EXPERTS);
            fp8Block(t, x + "up_proj", s.moeIntermediate(), h, Role.EXPERTS);
            fp8Block(t, x + "down_proj", h, s.moeIntermediate(), Role.EXPERTS);
        }
        int shared = s.moeIntermediate() * s.sharedExperts();
        fp8Block(t, mlp + "shared_experts.gate_proj", shared, h, Role.DENSE);
        fp8Block(t, mlp + "shared_experts.up_proj", shared, h, Role.DENSE);
        fp8Block(t, mlp + "shared_experts.down_proj", h, shared, Role.DENSE);
    }

    private static TensorSpec norm(String name, int size) {
        return new TensorSpec(name, DType.BF16, new long[] {size}, new Fill.Bf16Const(1f), Role.NORM);
    }

    private static Fill bias() {
        return new Fill.Bf16Random(0.05f);
    }

    private static Fill bf16Weights(int in) {
        return new Fill.Bf16Random((float) (1 / Math.sqrt(in)));
    }

    private static void bf16Linear(List<TensorSpec> t, String module, int out, int in, boolean bias, Role role) {
        t.add(new TensorSpec(module + ".weight", DType.BF16, new long[] {out, in}, bf16Weights(in), role));
        if (bias) {
            t.add(new TensorSpec(module + ".bias", DType.BF16, new long[] {out}, bias(), role));
        }
    }

    /** The hub's FP8 format: E4M3 weight and one F32 {@code weight_scale_inv} per 128 × 128 block. */
    private static void fp8Block(List<TensorSpec> t, String module, int out, int in, Role role) {
        t.add(new TensorSpec(module + ".weight", DType.F8_E4M3, new long[] {out, in}, new Fill.Fp8Codes(), role));
        t.add(new TensorSpec(module + ".weight_scale_inv", DType.F32,
                new long[] {Math.ceilDiv(out, FP8_BLOCK), Math.ceilDiv(in, FP8_BLOCK)},
                new Fill.F32Const(fp8Scale(in)), role));
    }

    /** compressed-tensors FP8 per tensor: E4M3 weight, F32 {@code weight_scale} and static {@code input_scale}. */
    private static void fp8Tensor(List<TensorSpec> t, String module, int out, int in, Role role) {
        t.add(new TensorSpec(module + ".weight", DType.F8_E4M3, new long[] {out, in}, new Fill.Fp8Codes(), role));
        t.add(new TensorSpec(module + ".weight_scale", DType.F32, new long[] {1}, new Fill.F32Const(fp8Scale(in)),
                role));
        t.add(new TensorSpec(module + ".input_scale", DType.F32, new long[] {1}, new Fill.F32Const(INPUT_SCALE),
                role));
    }

    private static float fp8Scale(int in) {
        return (float) (1 / (FP8_CODE_RMS * Math.sqrt(in)));
    }

    /** The E8M0 scale (a power of two) that makes FP4 codes unit-size weights for {@code in} inputs. */
    private static int e8m0(int in) {
        return 127 + (int) Math.round(Math.log(1 / (FP4_CODE_RMS * Math.sqrt(in))) / Math.log(2));
    }
}
