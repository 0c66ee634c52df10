package io.moe4j.bench;

import io.moe4j.format.ElementFormat;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.ScaleType;
import io.moe4j.quant.WeightFormat;

import java.util.Arrays;
import java.util.Locale;
import java.util.function.IntFunction;

/**
 * The weight and activation layouts {@link SyntheticWeights} can build, one per way a checkpoint of the seeds stores
 * its experts: code type, block-scale grid, zero points, act-order, per-shard scales, and the activation
 * quantize-dequantize the scheme implies.
 *
 * @param codes      weight code type
 * @param scaleType  block-scale storage, or null for none
 * @param blockRows  rows a block scale covers (1, or 128 for block FP8)
 * @param blockCols  columns a block scale covers; 0 means one per row (per-channel)
 * @param zeroPoints asymmetric integer weights
 * @param actOrder   act-order column groups (a per-expert column → group map)
 * @param shards     per-shard multipliers (gate and up halves of w13 separately; w2 whole)
 */
public enum SyntheticScheme {
    MXFP4("gpt-oss / OCP MX FP4 weights, E8M0 scales per 32, float activations", WeightFormat.MXFP4,
            CodeType.FP4_E2M1, ScaleType.E8M0, 1, 32, false, false, false, e -> ActivationQuant.NONE),
    MXFP4_A_MXFP4("OCP MX FP4 weights and activations", WeightFormat.MXFP4, CodeType.FP4_E2M1, ScaleType.E8M0, 1,
            32, false, false, false, e -> new ActivationQuant.Mx(ElementFormat.E2M1)),
    MXFP4_A_FP8("OCP MX FP4 weights, static per-tensor FP8 activations", WeightFormat.MXFP4, CodeType.FP4_E2M1,
            ScaleType.E8M0, 1, 32, false, false, false, e -> new ActivationQuant.Fp8Static(filled(e, 4f / 448f))),
    MXFP6_E3M2("OCP MX FP6 (E3M2) weights and activations", WeightFormat.MXFP6_E3M2, CodeType.FP6_E3M2,
            ScaleType.E8M0, 1, 32, false, false, false, e -> new ActivationQuant.Mx(ElementFormat.E3M2)),
    MXFP6_E2M3("OCP MX FP6 (E2M3) weights and activations", WeightFormat.MXFP6_E2M3, CodeType.FP6_E2M3,
            ScaleType.E8M0, 1, 32, false, false, false, e -> new ActivationQuant.Mx(ElementFormat.E2M3)),
    NVFP4("NVFP4 W4A4: E4M3 scales per 16, global scale per shard, NVFP4 activations", WeightFormat.NVFP4,
            CodeType.FP4_E2M1, ScaleType.E4M3, 1, 16, false, false, true,
            e -> new ActivationQuant.Nvfp4(filled(e, 448f * 6f / 4f))),
    NVFP4_A16("NVFP4 weights, float activations", WeightFormat.NVFP4, CodeType.FP4_E2M1, ScaleType.E4M3, 1, 16,
            false, false, true, e -> ActivationQuant.NONE),
    FP8_TENSOR("FP8 weights with a scale per shard, static FP8 activations", WeightFormat.FP8_TENSOR,
            CodeType.FP8_E4M3, null, 1, 0, false, false, true, e -> new ActivationQuant.Fp8Static(filled(e, 4f / 448f))),
    FP8_CHANNEL("FP8 weights with a scale per row, dynamic per-token FP8 activations", WeightFormat.FP8_CHANNEL,
            CodeType.FP8_E4M3, ScaleType.F32, 1, 0, false, false, false, e -> new ActivationQuant.Fp8PerToken()),
    FP8_BLOCK("FP8 weights with 128×128 block scales, dynamic FP8 activations per 128", WeightFormat.FP8_BLOCK,
            CodeType.FP8_E4M3, ScaleType.F32, 128, 128, false, false, false, e -> new ActivationQuant.Fp8Group(128)),
    FP8_E5M2("FP8 E5M2 weights with a scale per row, float activations", WeightFormat.FP8_CHANNEL,
            CodeType.FP8_E5M2, ScaleType.F32, 1, 0, false, false, false, e -> ActivationQuant.NONE),
    W4A16("INT4 weights, F32 scales per 128 columns, float activations", WeightFormat.INT4_GROUP, CodeType.INT4,
            ScaleType.F32, 1, 128, false, false, false, e -> ActivationQuant.NONE),
    W4A16_ASYM("INT4 weights with zero points per 32 columns", WeightFormat.INT4_GROUP, CodeType.INT4,
            ScaleType.F32, 1, 32, true, false, false, e -> ActivationQuant.NONE),
    W4A16_ACT_ORDER("INT4 weights, act-order groups of 32 with zero points", WeightFormat.INT4_GROUP, CodeType.INT4,
            ScaleType.F32, 1, 32, true, true, false, e -> ActivationQuant.NONE),
    /** GPTQ quantizes each projection on its own: w13's gate and up halves carry maps of their own. */
    W4A16_ACT_ORDER_SPLIT("INT4 weights, act-order groups of 32 with zero points, gate and up in orders of their own",
            WeightFormat.INT4_GROUP, CodeType.INT4, ScaleType.F32, 1, 32, true, true, false, e -> ActivationQuant.NONE,
            true),
    W4A16_CHANNEL("INT4 weights, one scale per row", WeightFormat.INT4_CHANNEL, CodeType.INT4, ScaleType.F32, 1, 0,
            false, false, false, e -> ActivationQuant.NONE),
    W4A8("INT4 weights per 32, dynamic per-token INT8 activations", WeightFormat.INT4_GROUP, CodeType.INT4,
            ScaleType.F32, 1, 32, false, false, false, e -> new ActivationQuant.Int8PerToken()),
    W8A16("INT8 weights, one scale per row, float activations", WeightFormat.INT8_CHANNEL, CodeType.INT8,
            ScaleType.F32, 1, 0, false, false, false, e -> ActivationQuant.NONE),
    W8A16_GROUP("INT8 weights, act-order groups of 32 with zero points", WeightFormat.INT8_GROUP, CodeType.INT8,
            ScaleType.F32, 1, 32, true, true, false, e -> ActivationQuant.NONE),
    INT8_STATIC("INT8 weights with a scale per shard, static INT8 activations", WeightFormat.INT8_TENSOR,
            CodeType.INT8, null, 1, 0, false, false, true, e -> new ActivationQuant.Int8Static(filled(e, 4f / 127f), null)),
    BF16("bfloat16 weights", WeightFormat.BF16, CodeType.BF16, null, 1, 0, false, false, false, e -> ActivationQuant.NONE),
    F16("float16 weights", WeightFormat.F16, CodeType.F16, null, 1, 0, false, false, false, e -> ActivationQuant.NONE),
    F32("float32 weights", WeightFormat.F32, CodeType.F32, null, 1, 0, false, false, false, e -> ActivationQuant.NONE);

    private final String description;
    private final WeightFormat weights;
    private final CodeType codes;
    private final ScaleType scaleType;
    private final int blockRows;
    private final int blockCols;
    private final boolean zeroPoints;
    private final boolean actOrder;
    private final boolean shards;
    private final IntFunction<ActivationQuant> activations;
    private final boolean splitActOrder;

    SyntheticScheme(String description, WeightFormat weights, CodeType codes, ScaleType scaleType, int blockRows,
                    int blockCols, boolean zeroPoints, boolean actOrder, boolean shards,
                    IntFunction<ActivationQuant> activations) {
        this(description, weights, codes, scaleType, blockRows, blockCols, zeroPoints, actOrder, shards, activations,
                false);
    }

    SyntheticScheme(String description, WeightFormat weights, CodeType codes, ScaleType scaleType, int blockRows,
                    int blockCols, boolean zeroPoints, boolean actOrder, boolean shards,
                    IntFunction<ActivationQuant> activations, boolean splitActOrder) {
        this.splitActOrder = splitActOrder;
        this.description = description;
        this.weights = weights;
        this.codes = codes;
        this.scaleType = scaleType;
        this.blockRows = blockRows;
        this.blockCols = blockCols;
        this.zeroPoints = zeroPoints;
        this.actOrder = actOrder;
        this.shards = shards;
        this.activations = activations;
    }

    /** The command-line name: lower case with dashes, e.g. {@code fp8-block}. */
    public String cliName() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    public static SyntheticScheme fromCliName(String name) {
        for (SyntheticScheme s : values()) {
            if (s.cliName().equalsIgnoreCase(name.trim())) {
                return s;
            }
        }
        throw new IllegalArgumentException("unknown scheme '" + name + "'; choose one of "
                + String.join(", ", Arrays.stream(values()).map(SyntheticScheme::cliName).toList()));
    }

    public String description() {
        return description;
    }

    public CodeType codes() {
        return codes;
    }

    public ScaleType scaleType() {
        return scaleType;
    }

    public int blockRows() {
        return blockRows;
    }

    /** Columns per block scale for a matrix of {@code cols} columns (all of them for per-channel scales). */
    public int blockCols(int cols) {
        return blockCols == 0 ? cols : blockCols;
    }

    public boolean zeroPoints() {
        return zeroPoints;
    }

    public boolean actOrder() {
        return actOrder;
    }

    /** Act-order maps per expert of w13: 2 when its gate and up halves have their own, else 1. */
    public int w13ActOrderParts() {
        return splitActOrder ? 2 : 1;
    }

    public boolean shards() {
        return shards;
    }

    /** The activation quantize-dequantize for a layer of {@code experts} local experts. */
    public ActivationQuant activations(int experts) {
        return activations.apply(experts);
    }

    public QuantScheme scheme(int experts) {
        ActivationFormat a = activations(experts).format();
        return new QuantScheme("synthetic " + cliName(), weights, a, actOrder);
    }

    private static float[] filled(int n, float v) {
        float[] a = new float[n];
        Arrays.fill(a, v);
        return a;
    }
}
