package io.moe4j.model;

/**
 * The scalar float helpers of the decoder. Subnormal operands are flushed to zero before they reach a multiply,
 * because Intel cores slow down 50-100x on them and their contribution is below float32 resolution anyway.
 */
public final class FloatMath {
    private FloatMath() {
    }

    public static float flushSubnormal(float v) {
        return Math.abs(v) < Float.MIN_NORMAL ? 0f : v;
    }

    /** Flushes the subnormals of x[off, off+len) to zero, in place. */
    public static void flushSubnormals(float[] x, int off, int len) {
        for (int i = off; i < off + len; i++) {
            x[i] = flushSubnormal(x[i]);
        }
    }

    /** The first {@code n} values of x, with subnormals flushed (a copy only when one is found). */
    public static float[] withoutSubnormals(float[] x, int n) {
        for (int i = 0; i < n; i++) {
            if (x[i] != 0f && Math.abs(x[i]) < Float.MIN_NORMAL) {
                float[] copy = x.clone();
                for (int j = i; j < n; j++) {
                    copy[j] = flushSubnormal(copy[j]);
                }
                return copy;
            }
        }
        return x;
    }

    public static float dot(float[] a, int aOff, float[] b, int bOff, int n) {
        float s = 0f;
        for (int i = 0; i < n; i++) {
            s += a[aOff + i] * b[bOff + i];
        }
        return s;
    }

    public static float silu(float x) {
        return flushSubnormal((float) (x / (1.0 + Math.exp(-x))));
    }

    /** a[i] += b[i]. */
    public static void addInPlace(float[] a, float[] b) {
        for (int i = 0; i < a.length; i++) {
            a[i] += b[i];
        }
    }
}
