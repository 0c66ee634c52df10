package io.moe4j.format;

/**
 * compressed-tensors {@code pack-quantized} int packing: 32 / bits signed values per int32 word, each stored
 * offset-binary (value + 2^(bits-1)), the first value in the lowest bits.
 */
public final class IntPacking {
    private IntPacking() {}

    /** The signed value at position {@code index} of a packed word. */
    public static int unpack(int word, int bits, int index) {
        return ((word >>> (index * bits)) & ((1 << bits) - 1)) - (1 << (bits - 1));
    }

    /** Values per 32-bit word. */
    public static int valuesPerWord(int bits) {
        check(bits);
        return 32 / bits;
    }

    /**
     * Packs signed values in [-2^(bits-1), 2^(bits-1)) into words. A last partial word has zero bits above its
     * values, as the reference pads the offset-binary values with zeros.
     */
    public static int[] pack(int[] signedValues, int bits) {
        int per = valuesPerWord(bits);
        int offset = 1 << (bits - 1);
        int[] words = new int[(signedValues.length + per - 1) / per];
        for (int i = 0; i < signedValues.length; i++) {
            int v = signedValues[i];
            if (v < -offset || v >= offset) {
                throw new IllegalArgumentException("value " + v + " at " + i + " does not fit in " + bits + " bits");
            }
            words[i / per] |= (v + offset) << ((i % per) * bits);
        }
        return words;
    }

    /** Unpacks n values from words into out[outOff...]. */
    public static void unpack(int[] words, int bits, int n, int[] out, int outOff) {
        int per = valuesPerWord(bits);
        for (int i = 0; i < n; i++) {
            out[outOff + i] = unpack(words[i / per], bits, i % per);
        }
    }

    private static void check(int bits) {
        if (bits != 2 && bits != 4 && bits != 8 && bits != 16) {
            throw new IllegalArgumentException("bits must divide 32 evenly (2, 4, 8, 16): " + bits);
        }
    }
}
