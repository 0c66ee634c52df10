package io.moe4j.backend.cpu;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * One panel's row sums against int8 tokens ({@link Q8Inputs}) in integer arithmetic: each lane word is read as two
 * 16-bit halves, a half's codes are shifted out as 16-bit integers (INT4 offset-binary 0..15, FP4 looked up as twice
 * its value, -12..12, INT8 sign-extended), multiplied by the broadcast token codes in 16-bit lanes (vpmullw) and
 * summed there; once a block the two halves of each lane are added into a 32-bit sum, which becomes a float once,
 * meets the block's d, and the segment's float sum meets the weight's block scale once.
 *
 * <p>Why 16-bit sums are exact: a 16-bit lane of a nibble codec adds 4 products a word over a block's 4 words,
 * 16 · 15 · 127 = 30480 at most; an INT8 lane adds the 2 products of one word, 2 · 128 · 127 = 32512, and is widened
 * every word. Both fit a signed 16-bit lane, so every integer sum is exact and the only rounding is the
 * activations' own (and the float sums of the blocks).
 *
 * <p>As in {@link FusedGemv}, word loops run on a {@code long} byte offset, and two tokens share a word's decode.
 */
final class Int8PanelDot {
    private static final VectorSpecies<Float> F = VectorShapes.F;
    private static final VectorSpecies<Integer> I = VectorShapes.I;
    /** Two 16-bit lanes a panel lane. */
    static final VectorSpecies<Short> S = VectorSpecies.of(short.class, VectorShape.forBitSize(VectorWidth.BITS));
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final int L = PanelMatrix.LANES;
    private static final long WB = VectorShapes.WORD_BYTES;
    private static final VectorOperators.Binary SHL = VectorOperators.LSHL;
    private static final VectorOperators.Binary SHR = VectorOperators.LSHR;
    private static final VectorOperators.Binary SAR = VectorOperators.ASHR;
    /** Twice the E2M1 value of each FP4 code (sign in bit 3): integers, exact. */
    private static final ShortVector FP4_TWICE = ShortVector.fromArray(S, fp4Twice(S.length()), 0);
    /** 16 bytes: four rows' lane words, or 16 FP4 codes' values ({@link #fp4Bytes}). */
    private static final VectorSpecies<Byte> B16 = ByteVector.SPECIES_128;
    /** Twice the value of each FP4 code, as bytes. */
    private static final byte[] FP4_TWICE_BYTES = fp4TwiceBytes();
    /**
     * Whether one FP4 token goes through {@link #fp4Bytes}: 8-lane panels on a machine without the one-instruction
     * 16-bit lookup of AVX-512 (there {@link #nibbles}' lookup is several instructions). Several tokens keep
     * {@link #decodeFp4}, which looks each code up once for all of them (measured faster from 8 tokens on).
     * {@code -Dmoe4j.cpu.fp4Bytes=false} turns it off, for comparison.
     */
    static final boolean FP4_BYTES = L == 8 && S.length() == 16 && !SlotDecode.WIDE_FP4_LOOKUP
            && Boolean.parseBoolean(System.getProperty("moe4j.cpu.fp4Bytes", "true"));
    private static final VectorShuffle<Float> ROWS_0_3 = VectorShuffle.fromValues(F, pick(0));
    private static final VectorShuffle<Float> ROWS_4_7 = VectorShuffle.fromValues(F, pick(4));
    private static final VectorShuffle<Float> NEXT = VectorShuffle.fromOp(F, i -> (i + 1) % F.length());
    private static final VectorShuffle<Float> EVENS = VectorShuffle.fromOp(F, i -> (2 * i) % F.length());

    private Int8PanelDot() {
    }

    private static byte[] fp4TwiceBytes() {
        byte[] t = new byte[16];
        for (int c = 0; c < 16; c++) {
            t[c] = (byte) (2 * LaneCodec.FP4.value(c));
        }
        return t;
    }

    /** Lane i holds row first + i/2 (each row of four in two lanes). */
    private static int[] pick(int first) {
        int[] p = new int[F.length()];
        for (int i = 0; i < p.length; i++) {
            p[i] = (first + i / 2) % F.length();
        }
        return p;
    }

    static short[] fp4Twice(int length) {
        short[] t = new short[Math.max(16, length)];
        for (int c = 0; c < 16; c++) {
            t[c] = (short) (2 * LaneCodec.FP4.value(c));
        }
        return t;
    }

    /** The int x broadcast to every 32-bit lane, read as 16-bit lanes (low half, high half). */
    private static ShortVector pair(int x) {
        return IntVector.broadcast(I, x).reinterpretAsShorts();
    }

    /** Each 32-bit lane's two 16-bit halves added, sign-extended. */
    private static IntVector widen(ShortVector v) {
        IntVector i = v.reinterpretAsInts();
        return i.lanewise(SHL, 16).lanewise(SAR, 16).add(i.lanewise(SAR, 16));
    }

    /** offset + zero point of each lane for segment g, or null when there are no zero points. */
    private static IntVector offsets(float[] zeros, int g, int offset) {
        return zeros == null ? null
                : (IntVector) FloatVector.fromArray(F, zeros, g * L).add(offset).convert(VectorOperators.F2I, 0);
    }

    /**
     * out[0, L) for token a and out[L, 2L) for token b: Σ_g scale_g · Σ_blocks d_b · Σ (code − offset − zero) · q over
     * a panel of nibble codes (INT4, or FP4 when {@code fp4}).
     *
     * @param zeros the panel's zero points by segment (VectorScales), or null
     */
    static void nibblesPair(MemorySegment words, long base, int[] seg, boolean fp4, int offset, float[] zeros,
                            MemorySegment e8m0, long scaleAt, float[] scales,
                            int[] xa, float[] da, int[] qa, int[] xb, float[] db, int[] qb, float[] out) {
        FloatVector accA = FloatVector.zero(F);
        FloatVector accB = accA;
        int b = 0;
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector sA = FloatVector.zero(F);
            FloatVector sB = sA;
            IntVector oz = offsets(zeros, g, offset);
            for (int w = seg[g], segEnd = seg[g + 1]; w < segEnd; b++) {
                int wEnd = Math.min(w + 4, segEnd);
                ShortVector ca = ShortVector.zero(S);
                ShortVector cb = ca;
                int xi = 4 * w;
                for (long o = base + WB * w, end = base + WB * wEnd; o < end; o += WB, xi += 4) {
                    ShortVector v = IntVector.fromMemorySegment(I, words, o, LE).reinterpretAsShorts();
                    // A short loop, not written out: with two tokens the written-out slots parse into more nodes
                    // than C2 inlines, and their vectors went to the heap (5.8x slower than one token, measured).
                    for (int k = 0; k < 4; k++) {
                        ShortVector n = v.lanewise(SHR, 4 * k).and((short) 15);
                        if (fp4) {
                            n = n.selectFrom(FP4_TWICE);
                        }
                        ca = ca.add(n.mul(pair(xa[xi + k])));
                        cb = cb.add(n.mul(pair(xb[xi + k])));
                    }
                }
                w = wEnd;
                IntVector ia = widen(ca);
                IntVector ib = widen(cb);
                if (oz != null) {
                    ia = ia.sub(oz.mul(qa[b]));
                    ib = ib.sub(oz.mul(qb[b]));
                } else if (offset != 0) {
                    ia = ia.sub(offset * qa[b]);
                    ib = ib.sub(offset * qb[b]);
                }
                sA = ((FloatVector) ia.convert(VectorOperators.I2F, 0)).fma(FloatVector.broadcast(F, da[b]), sA);
                sB = ((FloatVector) ib.convert(VectorOperators.I2F, 0)).fma(FloatVector.broadcast(F, db[b]), sB);
            }
            FloatVector s = FusedGemv.fp4Scale(e8m0, scaleAt, g, scales);
            accA = sA.fma(s, accA);
            accB = sB.fma(s, accB);
        }
        accA.intoArray(out, 0);
        accB.intoArray(out, L);
    }

    /** {@link #nibblesPair} for one token: out[0, L). */
    static void nibbles(MemorySegment words, long base, int[] seg, boolean fp4, int offset, float[] zeros,
                        MemorySegment e8m0, long scaleAt, float[] scales, int[] xa, float[] da, int[] qa, float[] out) {
        FloatVector accA = FloatVector.zero(F);
        int b = 0;
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector sA = FloatVector.zero(F);
            IntVector oz = offsets(zeros, g, offset);
            for (int w = seg[g], segEnd = seg[g + 1]; w < segEnd; b++) {
                int wEnd = Math.min(w + 4, segEnd);
                ShortVector ca = ShortVector.zero(S);
                int xi = 4 * w;
                for (long o = base + WB * w, end = base + WB * wEnd; o < end; o += WB, xi += 4) {
                    ShortVector v = IntVector.fromMemorySegment(I, words, o, LE).reinterpretAsShorts();
                    for (int k = 0; k < 4; k++) {
                        ShortVector n = v.lanewise(SHR, 4 * k).and((short) 15);
                        if (fp4) {
                            n = n.selectFrom(FP4_TWICE);
                        }
                        ca = ca.add(n.mul(pair(xa[xi + k])));
                    }
                }
                w = wEnd;
                IntVector ia = widen(ca);
                if (oz != null) {
                    ia = ia.sub(oz.mul(qa[b]));
                } else if (offset != 0) {
                    ia = ia.sub(offset * qa[b]);
                }
                sA = ((FloatVector) ia.convert(VectorOperators.I2F, 0)).fma(FloatVector.broadcast(F, da[b]), sA);
            }
            accA = sA.fma(FusedGemv.fp4Scale(e8m0, scaleAt, g, scales), accA);
        }
        accA.intoArray(out, 0);
    }

    /**
     * {@link #nibbles} for FP4 by 16-byte table lookups, for 8-lane panels: a lane word's 32 bytes are four rows'
     * words twice, and a byte holds slots 2i (low nibble) and 2i + 1 (high nibble) of its row. A byte lookup (one
     * {@code vpshufb}) turns 16 nibbles into twice their values as bytes, which widen to 16-bit lanes (row r, byte i
     * at lane 4r + i) and meet the token's codes in the same arrangement ({@link Q8Inputs#byteLanes}). Once a block
     * each 32-bit lane's halves are added (a row's sum in two int lanes) and become floats; a row's two float lanes
     * are added once at the end.
     *
     * <p>16-bit sums are exact: a lane adds two products a word over a block's 4 words, 8 · 12 · 127 = 12192 at most.
     */
    static void fp4Bytes(MemorySegment words, long base, int[] seg, float[] scales, short[] xs, float[] d,
                         float[] out) {
        // One loop over the panel's words with the block's end as a branch in it: with a loop a block, C2 kept the
        // 16-bit sums on the stack (a store and a load every word). The float sums wait in out[0, 2L).
        FloatVector.zero(F).intoArray(out, 0);
        FloatVector.zero(F).intoArray(out, L);
        int vl = S.length();
        int last = seg.length - 1;
        int g = nonEmpty(seg, 0);
        int b = 0;
        int blockEnd = g < last ? Math.min(seg[g] + 4, seg[g + 1]) : 0;
        ShortVector lo = ShortVector.zero(S);
        ShortVector hi = lo;
        for (int v = seg[0], end = seg[last]; v < end; v++) {
            long o = base + WB * v;
            ShortVector xe = ShortVector.fromArray(S, xs, 2 * vl * v);
            ShortVector xo = ShortVector.fromArray(S, xs, 2 * vl * v + vl);
            ByteVector r0 = ByteVector.fromMemorySegment(B16, words, o, LE);
            ByteVector r4 = ByteVector.fromMemorySegment(B16, words, o + 16, LE);
            lo = lo.add(twice(r0).mul(xe)).add(twice(high(r0)).mul(xo));
            hi = hi.add(twice(r4).mul(xe)).add(twice(high(r4)).mul(xo));
            if (v + 1 == blockEnd) {
                FloatVector s = FloatVector.fromArray(F, scales, g * L).mul(d[b]);
                ((FloatVector) widen(lo).convert(VectorOperators.I2F, 0))
                        .fma(s.rearrange(ROWS_0_3), FloatVector.fromArray(F, out, 0)).intoArray(out, 0);
                ((FloatVector) widen(hi).convert(VectorOperators.I2F, 0))
                        .fma(s.rearrange(ROWS_4_7), FloatVector.fromArray(F, out, L)).intoArray(out, L);
                lo = ShortVector.zero(S);
                hi = lo;
                b++;
                if (blockEnd == seg[g + 1]) {
                    g = nonEmpty(seg, g + 1);
                    if (g == last) {
                        break;
                    }
                }
                blockEnd = Math.min(blockEnd + 4, seg[g + 1]);
            }
        }
        // row r's two lanes: 2r and 2r + 1
        FloatVector accLo = FloatVector.fromArray(F, out, 0);
        FloatVector accHi = FloatVector.fromArray(F, out, L);
        accLo.add(accLo.rearrange(NEXT)).rearrange(EVENS).intoArray(out, 0);
        accHi.add(accHi.rearrange(NEXT)).rearrange(EVENS).intoArray(out, 4);
    }

    /** The first segment from g on that holds words (an empty one has no blocks), or the segment count. */
    private static int nonEmpty(int[] seg, int g) {
        while (g < seg.length - 1 && seg[g + 1] == seg[g]) {
            g++;
        }
        return g;
    }

    /**
     * The FP4 codes in each byte's low nibble as twice their values, widened to 16-bit lanes. {@code selectFrom}
     * wraps its indices to the 16 entries (an AND of the low four bits, then {@code vpshufb}), which drops the
     * high nibble.
     */
    private static ShortVector twice(ByteVector codes) {
        return (ShortVector) codes.selectFrom(ByteVector.fromArray(B16, FP4_TWICE_BYTES, 0))
                .convertShape(VectorOperators.B2S, S, 0);
    }

    /** Each byte's high nibble moved to its low nibble (the bits above it are dropped by {@link #twice}). */
    private static ByteVector high(ByteVector codes) {
        return codes.reinterpretAsShorts().lanewise(SHR, 4).reinterpretAsBytes();
    }

    /**
     * The FP4 codes of a panel's words [from, to) as twice their values in 16-bit lanes, once for every token that
     * follows ({@link #decodedFp4}): four vectors a word, slot k of each 16-bit half in vector k. Where the 16-bit
     * lookup is several instructions (AVX2), this is the costly part of a token's pass.
     */
    static void decodeFp4(MemorySegment words, long base, int from, int to, short[] out) {
        int at = 0;
        for (long o = base + WB * from, end = base + WB * to; o < end; o += WB) {
            ShortVector v = IntVector.fromMemorySegment(I, words, o, LE).reinterpretAsShorts();
            for (int k = 0; k < 4; k++) {
                v.lanewise(SHR, 4 * k).and((short) 15).selectFrom(FP4_TWICE).intoArray(out, at);
                at += S.length();
            }
        }
    }

    /** {@link #nibbles} for FP4 over the codes {@link #decodeFp4} made of the panel's words from seg[0] on. */
    static void decodedFp4(short[] codes, int[] seg, MemorySegment e8m0, long scaleAt, float[] scales, int[] xa,
                           float[] da, float[] out) {
        FloatVector accA = FloatVector.zero(F);
        int b = 0;
        int vl = S.length();
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector sA = FloatVector.zero(F);
            for (int w = seg[g], segEnd = seg[g + 1]; w < segEnd; b++) {
                int wEnd = Math.min(w + 4, segEnd);
                ShortVector ca = ShortVector.zero(S);
                for (int at = (w - seg[0]) * 4 * vl, end = (wEnd - seg[0]) * 4 * vl, xi = 4 * w; at < end;
                     at += 4 * vl, xi += 4) {
                    for (int k = 0; k < 4; k++) {
                        ca = ca.add(ShortVector.fromArray(S, codes, at + k * vl).mul(pair(xa[xi + k])));
                    }
                }
                w = wEnd;
                sA = ((FloatVector) widen(ca).convert(VectorOperators.I2F, 0)).fma(FloatVector.broadcast(F, da[b]), sA);
            }
            accA = sA.fma(FusedGemv.fp4Scale(e8m0, scaleAt, g, scales), accA);
        }
        accA.intoArray(out, 0);
    }

    /**
     * out[0, L) for token a and out[L, 2L) for token b over a panel of INT8 codes (offset-binary bytes, made signed
     * by flipping their top bit); blocks of 8 words.
     */
    static void bytesPair(MemorySegment words, long base, int[] seg, float[] zeros, float[] scales,
                          int[] xa, float[] da, int[] qa, int[] xb, float[] db, int[] qb, float[] out) {
        FloatVector accA = FloatVector.zero(F);
        FloatVector accB = accA;
        int b = 0;
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector sA = FloatVector.zero(F);
            FloatVector sB = sA;
            IntVector oz = offsets(zeros, g, 0);
            for (int w = seg[g], segEnd = seg[g + 1]; w < segEnd; b++) {
                int wEnd = Math.min(w + 8, segEnd);
                IntVector ia = IntVector.zero(I);
                IntVector ib = ia;
                int xi = 2 * w;
                for (long o = base + WB * w, end = base + WB * wEnd; o < end; o += WB, xi += 2) {
                    ShortVector v = IntVector.fromMemorySegment(I, words, o, LE).reinterpretAsShorts()
                            .lanewise(VectorOperators.XOR, (short) 0x8080);
                    ShortVector lo = v.lanewise(SHL, 8).lanewise(SAR, 8);
                    ShortVector hi = v.lanewise(SAR, 8);
                    ia = ia.add(widen(lo.mul(pair(xa[xi])).add(hi.mul(pair(xa[xi + 1])))));
                    ib = ib.add(widen(lo.mul(pair(xb[xi])).add(hi.mul(pair(xb[xi + 1])))));
                }
                w = wEnd;
                if (oz != null) {
                    ia = ia.sub(oz.mul(qa[b]));
                    ib = ib.sub(oz.mul(qb[b]));
                }
                sA = ((FloatVector) ia.convert(VectorOperators.I2F, 0)).fma(FloatVector.broadcast(F, da[b]), sA);
                sB = ((FloatVector) ib.convert(VectorOperators.I2F, 0)).fma(FloatVector.broadcast(F, db[b]), sB);
            }
            FloatVector s = FloatVector.fromArray(F, scales, g * L);
            accA = sA.fma(s, accA);
            accB = sB.fma(s, accB);
        }
        accA.intoArray(out, 0);
        accB.intoArray(out, L);
    }

    /** {@link #bytesPair} for one token: out[0, L). */
    static void bytes(MemorySegment words, long base, int[] seg, float[] zeros, float[] scales,
                      int[] xa, float[] da, int[] qa, float[] out) {
        FloatVector accA = FloatVector.zero(F);
        int b = 0;
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector sA = FloatVector.zero(F);
            IntVector oz = offsets(zeros, g, 0);
            for (int w = seg[g], segEnd = seg[g + 1]; w < segEnd; b++) {
                int wEnd = Math.min(w + 8, segEnd);
                IntVector ia = IntVector.zero(I);
                int xi = 2 * w;
                for (long o = base + WB * w, end = base + WB * wEnd; o < end; o += WB, xi += 2) {
                    ShortVector v = IntVector.fromMemorySegment(I, words, o, LE).reinterpretAsShorts()
                            .lanewise(VectorOperators.XOR, (short) 0x8080);
                    ShortVector lo = v.lanewise(SHL, 8).lanewise(SAR, 8);
                    ShortVector hi = v.lanewise(SAR, 8);
                    ia = ia.add(widen(lo.mul(pair(xa[xi])).add(hi.mul(pair(xa[xi + 1])))));
                }
                w = wEnd;
                if (oz != null) {
                    ia = ia.sub(oz.mul(qa[b]));
                }
                sA = ((FloatVector) ia.convert(VectorOperators.I2F, 0)).fma(FloatVector.broadcast(F, da[b]), sA);
            }
            accA = sA.fma(FloatVector.fromArray(F, scales, g * L), accA);
        }
        accA.intoArray(out, 0);
    }
}
