package io.moe4j.backend.cuda;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.backend.cuda.driver.KernelArgs;
import io.moe4j.format.ElementFormat;
import io.moe4j.quant.ActivationQuant;
import java.lang.foreign.Arena;

/**
 * An {@link ActivationQuant} as the row kernels take it (the {@code Qdq} of moe4j_quant.cuh): a kind, an element
 * format, a group size and the per-expert static scales and zero points on the device.
 */
final class DeviceQuant implements AutoCloseable {
    static final int NONE = 0;
    static final int MX = 1;
    static final int NVFP4 = 2;
    static final int FP8_STATIC = 3;
    static final int FP8_TOKEN = 4;
    static final int FP8_GROUP = 5;
    static final int INT8_STATIC = 6;
    static final int INT8_TOKEN = 7;

    private final int kind;
    private final int element;
    private final int group;
    private final DeviceBuffer scale;
    private final DeviceBuffer zero;

    private DeviceQuant(int kind, int element, int group, DeviceBuffer scale, DeviceBuffer zero) {
        this.kind = kind;
        this.element = element;
        this.group = group;
        this.scale = scale;
        this.zero = zero;
    }

    static DeviceQuant upload(CudaContext ctx, ActivationQuant q) {
        return switch (q) {
            case ActivationQuant.None n -> new DeviceQuant(NONE, 0, 0, null, null);
            case ActivationQuant.Mx mx -> new DeviceQuant(MX, element(mx.element()), 32, null, null);
            case ActivationQuant.Nvfp4 nv -> new DeviceQuant(NVFP4, 1, 16, floats(ctx, nv.globalScale()), null);
            case ActivationQuant.Fp8Static f -> new DeviceQuant(FP8_STATIC, 4, 0, floats(ctx, f.scale()), null);
            case ActivationQuant.Fp8PerToken f -> new DeviceQuant(FP8_TOKEN, 4, 0, null, null);
            case ActivationQuant.Fp8Group f -> {
                if (f.group() <= 0) {
                    throw new IllegalArgumentException("FP8 group must be positive: " + f.group());
                }
                yield new DeviceQuant(FP8_GROUP, 4, f.group(), null, null);
            }
            case ActivationQuant.Int8Static i -> {
                DeviceBuffer s = floats(ctx, i.scale());
                DeviceBuffer z = null;
                if (i.zeroPoint() != null) {
                    z = ctx.allocate(4L * i.zeroPoint().length);
                    try (Arena a = Arena.ofConfined()) {
                        z.copyFrom(a.allocateFrom(JAVA_INT, i.zeroPoint()));
                    }
                }
                yield new DeviceQuant(INT8_STATIC, 0, 0, s, z);
            }
            case ActivationQuant.Int8PerToken i -> new DeviceQuant(INT8_TOKEN, 0, 0, null, null);
        };
    }

    private static int element(ElementFormat f) {
        return switch (f) {
            case E2M1 -> 1;
            case E3M2 -> 2;
            case E2M3 -> 3;
            default -> throw new IllegalArgumentException(f + " is not an MX activation element");
        };
    }

    private static DeviceBuffer floats(CudaContext ctx, float[] v) {
        DeviceBuffer b = ctx.allocate(4L * Math.max(1, v.length));
        try (Arena a = Arena.ofConfined()) {
            b.copyFrom(a.allocateFrom(JAVA_FLOAT, v));
        }
        return b;
    }

    boolean none() {
        return kind == NONE;
    }

    /**
     * Whether a warp may apply this rule to each {@code width} values of a row on their own (qdq_span with 32 lanes,
     * as model_attend_rows does to each head's output): every group or block lies within them, and no maximum is
     * taken over the whole row (the per-token kinds).
     */
    boolean localTo(int width) {
        return switch (kind) {
            case FP8_STATIC, INT8_STATIC -> true;
            case MX, NVFP4, FP8_GROUP -> width % group == 0;
            default -> false;
        };
    }

    /** Appends qKind, qElem, qGroup, qScale, qZero. */
    KernelArgs append(KernelArgs args) {
        return args.i32(kind).i32(element).i32(group).pointer(scale == null ? 0L : scale.pointer())
                .pointer(zero == null ? 0L : zero.pointer());
    }

    /** Appends the Qdq arguments of no rule (QDQ_NONE), for a kernel that takes one optionally. */
    static KernelArgs appendNone(KernelArgs args) {
        return args.i32(NONE).i32(0).i32(0).pointer(0L).pointer(0L);
    }

    @Override
    public void close() {
        if (scale != null) {
            scale.close();
        }
        if (zero != null) {
            zero.close();
        }
    }
}
