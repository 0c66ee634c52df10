package io.moe4j.bench.model;

import java.util.SplittableRandom;

/**
 * How the synthetic writer fills a tensor: eight bytes at a time (a tensor's data is written from its start in
 * whole longs, little-endian, the tail taking the low bytes of one more). Every pattern gives normal floats or zero,
 * never a NaN, an infinity or a subnormal, so the kernels run the bench as they run a real checkpoint.
 */
sealed interface Fill {

    /** The next eight bytes of the tensor as a little-endian long. */
    long next(SplittableRandom rnd);

    /** Any byte: FP4 (E2M1) code pairs. */
    record RandomBytes() implements Fill {
        @Override
        public long next(SplittableRandom rnd) {
            return rnd.nextLong();
        }
    }

    /** One byte everywhere: E8M0 block scales. */
    record ByteConst(int value) implements Fill {
        @Override
        public long next(SplittableRandom rnd) {
            return (value & 0xFFL) * 0x0101010101010101L;
        }
    }

    /**
     * E4M3 codes of magnitude 2^-2 to 1.875 · 2^1 with a random sign and mantissa: exponent fields 5 to 8 only, so
     * never the NaN code and never a subnormal.
     */
    record Fp8Codes() implements Fill {
        @Override
        public long next(SplittableRandom rnd) {
            long x = rnd.nextLong();
            return (x & 0x8787878787878787L) | ((((x >>> 3) & 0x0303030303030303L) + 0x0505050505050505L) << 3);
        }
    }

    /**
     * BF16 values of magnitude scale/8 to 2·scale (the exponent of scale less 0 to 3, a random mantissa and sign).
     */
    record Bf16Random(float scale) implements Fill {
        public Bf16Random {
            if (!(scale > 0x1p-120f && scale < 0x1p120f)) {
                throw new IllegalArgumentException("scale out of range: " + scale);
            }
        }

        @Override
        public long next(SplittableRandom rnd) {
            long e = (Float.floatToRawIntBits(scale) >>> 23) & 0xFF;
            long x = rnd.nextLong();
            long exponents = e * 0x0001000100010001L - ((x >>> 7) & 0x0003000300030003L);
            return (x & 0x807F807F807F807FL) | (exponents << 7);
        }
    }

    /** One BF16 value everywhere: norm weights. */
    record Bf16Const(float value) implements Fill {
        @Override
        public long next(SplittableRandom rnd) {
            return (Float.floatToRawIntBits(value) >>> 16) * 0x0001000100010001L;
        }
    }

    /** One F32 value everywhere: per-tensor and block scales. */
    record F32Const(float value) implements Fill {
        @Override
        public long next(SplittableRandom rnd) {
            return (Float.floatToRawIntBits(value) & 0xFFFFFFFFL) * 0x0000000100000001L;
        }
    }

    /** F32 values uniform in (-scale, scale) on a 2^-23 grid: DeepSeek's routing correction bias. */
    record F32Random(float scale) implements Fill {
        @Override
        public long next(SplittableRandom rnd) {
            long x = rnd.nextLong();
            return bits(x) | (bits(x >>> 32) << 32);
        }

        private long bits(long r) {
            float u = ((r & 0xFFFFFF) - 0x800000) * 0x1p-23f * scale;
            return Float.floatToRawIntBits(u) & 0xFFFFFFFFL;
        }
    }
}
