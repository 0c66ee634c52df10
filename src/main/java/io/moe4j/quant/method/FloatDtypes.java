package io.moe4j.quant.method;

import io.moe4j.quant.CodeType;
import io.moe4j.quant.WeightFormat;
import io.moe4j.safetensors.DType;

/** The unquantized weight dtypes (BF16, F16, F32) as safetensors dtypes, code types and weight formats. */
final class FloatDtypes {
    private FloatDtypes() {
    }

    static CodeType codeType(DType d) {
        return switch (d) {
            case BF16 -> CodeType.BF16;
            case F16 -> CodeType.F16;
            case F32 -> CodeType.F32;
            default -> throw new IllegalArgumentException(d + " is not an unquantized weight dtype");
        };
    }

    static WeightFormat weightFormat(CodeType c) {
        return switch (c) {
            case BF16 -> WeightFormat.BF16;
            case F16 -> WeightFormat.F16;
            case F32 -> WeightFormat.F32;
            default -> throw new IllegalArgumentException(c + " is not an unquantized weight format");
        };
    }

    static DType dtype(WeightFormat w) {
        return switch (w) {
            case BF16 -> DType.BF16;
            case F16 -> DType.F16;
            case F32 -> DType.F32;
            default -> throw new IllegalArgumentException(w + " is not an unquantized weight format");
        };
    }
}
