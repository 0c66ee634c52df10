package io.moe4j.backend.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.model.Logits;
import io.moe4j.model.TokenDraw;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The decoder's small device kernels against the formulas computed here in float64: the greedy choice (ties, NaN,
 * -infinity, widths not a multiple of 4) by {@link Logits#argmax}'s rule exactly; draws by {@link TokenDraw}'s rule
 * (up to float32 weights); RMSNorm on each of its paths (rows
 * held in registers, rows of odd widths, rows too wide to hold) with and without the residual add; router logits
 * (float64 sums of exact products) with a bias; grouped-query attention against softmax attention, latent
 * attention against its expanded form.
 */
class ModelOpsKernelsTest {
    @BeforeEach
    void requireGpu() {
        CudaProbe probe = CudaRuntime.probe();
        assumeTrue(probe.available(), () -> "no usable CUDA device: " + probe.reason());
    }

    @Test
    void argmaxFollowsTheHostRule() {
        SplittableRandom rnd = new SplittableRandom(11);
        try (ModelOps ops = ModelOps.open(); DeviceBuffer out = ops.allocate(4)) {
            for (int n : new int[] {1, 3, 4, 7, 1025, 4099, 201088}) {
                float[] plain = new float[n];
                for (int i = 0; i < n; i++) {
                    plain[i] = (float) rnd.nextGaussian();
                }
                float[] tiedLate = plain.clone();
                int top = Logits.argmax(plain, 0, n);
                tiedLate[n - 1] = plain[top]; // a tie later than the first maximum
                float[] tiedEarly = plain.clone();
                tiedEarly[0] = plain[top]; // a tie at index 0
                float[] negInf = new float[n];
                Arrays.fill(negInf, Float.NEGATIVE_INFINITY);
                float[] nanFirst = plain.clone();
                nanFirst[0] = Float.NaN;
                float[] nanElsewhere = plain.clone();
                nanElsewhere[n / 2] = Float.NaN;
                float[] oneFinite = negInf.clone();
                oneFinite[n - 1] = -1e30f;
                float[] allNan = new float[n];
                Arrays.fill(allNan, Float.NaN);
                float[] negInfThenNan = allNan.clone();
                negInfThenNan[0] = Float.NEGATIVE_INFINITY;
                for (float[] x : new float[][] {plain, tiedLate, tiedEarly, negInf, nanFirst, nanElsewhere, oneFinite,
                        allNan, negInfThenNan}) {
                    try (DeviceBuffer dx = ops.upload(x)) {
                        // the host's greedy draw: argmax's id, none (-1) where its logit is NaN or -infinity
                        int chosen = Logits.argmax(x, 0, n);
                        int expected = Float.isNaN(x[chosen]) || x[chosen] == Float.NEGATIVE_INFINITY ? -1 : chosen;
                        assertThat(ops.argmax(dx.pointer(), n, out)).as("n = %d", n).isEqualTo(expected);
                    }
                }
            }
        }
    }

    /**
     * Draws on the device against {@link TokenDraw#pick} with the same random numbers, every row of a call under its
     * own rule: greedy-like, plain and cut by top-k, top-p and min-p, over rows of distinct logits, of large groups of
     * equal logits (top-k and top-p cut inside a group, which keeps its lowest ids), and with NaN and -infinity.
     * The device's weights are float32, the host's float64, so a draw may differ where its random number lies within
     * rounding of a boundary between two tokens: a differing draw must be the host's a millionth either side, and
     * nearly all must be equal.
     */
    @Test
    void drawsFollowTheHostRule() {
        SplittableRandom rnd = new SplittableRandom(23);
        List<TokenDraw> rules = new ArrayList<>();
        for (double t : new double[] {0.3, 1.0, 1.7}) {
            for (int k : new int[] {0, 1, 50, 5000}) {
                for (double p : new double[] {1.0, 0.9, 0.3}) {
                    for (double minP : new double[] {0.0, 0.05}) {
                        rules.add(new TokenDraw(t, k, p, minP, 0));
                    }
                }
            }
        }
        rules.add(new TokenDraw(1e-30, 0, 1, 0, 0)); // 1 / temperature overflows float: the top token alone
        int rows = rules.size();
        int equal = 0, draws = 0;
        try (ModelOps ops = ModelOps.open(); DeviceBuffer out = ops.allocate(4L * rows);
             Arena arena = Arena.ofConfined()) {
            for (int n : new int[] {1, 7, 1000, 201088}) {
                float[] distinct = new float[n];
                float[] grouped = new float[n];
                float[] holes = new float[n];
                for (int i = 0; i < n; i++) {
                    distinct[i] = (float) (3 * rnd.nextGaussian());
                    grouped[i] = Math.round(4 * rnd.nextGaussian()) / 2f; // ~25 values: groups of thousands
                    holes[i] = i % 3 == 0 ? Float.NaN : i % 3 == 1 ? Float.NEGATIVE_INFINITY : distinct[i];
                }
                for (float[] row : new float[][] {distinct, grouped, holes}) {
                    float[] x = new float[rows * n];
                    MemorySegment staged = arena.allocate((long) ModelOps.DRAW_RULE_BYTES * rows, 8);
                    TokenDraw[] drawn = new TokenDraw[rows];
                    for (int r = 0; r < rows; r++) {
                        System.arraycopy(row, 0, x, r * n, n);
                        TokenDraw d = rules.get(r);
                        drawn[r] = new TokenDraw(d.temperature(), d.topK(), d.topP(), d.minP(), rnd.nextDouble());
                        ModelOps.stageDrawRule(staged, (long) ModelOps.DRAW_RULE_BYTES * r, drawn[r].uniform(),
                                d.temperature(), d.topP(), d.minP(), d.topK());
                    }
                    boolean anyCandidate = n > 1 || row != holes; // a one-logit row of holes is NaN alone
                    int[] ids;
                    try (DeviceBuffer dx = ops.upload(x); DeviceBuffer dr = ops.upload(staged)) {
                        ids = ops.sampleRows(dx.pointer(), rows, n, dr.pointer(), out);
                    }
                    for (int r = 0; r < rows; r++) {
                        if (!anyCandidate) {
                            assertThat(ids[r]).isEqualTo(-1);
                            continue;
                        }
                        TokenDraw d = drawn[r];
                        int host = d.pick(row, 0, n, null);
                        draws++;
                        if (ids[r] == host) {
                            equal++;
                            continue;
                        }
                        int below = new TokenDraw(d.temperature(), d.topK(), d.topP(), d.minP(),
                                Math.max(0, d.uniform() - 1e-6)).pick(row, 0, n, null);
                        int above = new TokenDraw(d.temperature(), d.topK(), d.topP(), d.minP(),
                                Math.min(Math.nextDown(1.0), d.uniform() + 1e-6)).pick(row, 0, n, null);
                        assertThat(ids[r]).as("n %d, %s: device %d, host %d", n, d, ids[r], host).isIn(below, above);
                    }
                }
            }
        }
        assertThat(equal).as("draws equal to the host's").isGreaterThanOrEqualTo(draws - draws / 100);
    }

    @Test
    void rmsNormOnEveryPath() {
        SplittableRandom rnd = new SplittableRandom(5);
        try (ModelOps ops = ModelOps.open()) {
            for (int n : new int[] {2880, 64, 18, 4100, 20000}) { // held, held, odd, held (1025 threads' worth), looped
                int rows = 3;
                float[] x = random(rnd, rows * n, 2.0);
                float[] add = random(rnd, rows * n, 1.0);
                float[] add2 = random(rnd, rows * n, 1.0);
                float[] weight = random(rnd, n, 1.0);
                float eps = 1e-5f;
                for (int adds = 0; adds <= 2; adds++) {
                    boolean withAdd = adds > 0;
                    boolean withAdd2 = adds > 1;
                    for (boolean withWeight : new boolean[] {false, true}) {
                        try (DeviceBuffer dx = ops.upload(x); DeviceBuffer da = ops.upload(add);
                                DeviceBuffer da2 = ops.upload(add2); DeviceBuffer dw = ops.upload(weight);
                                DeviceBuffer out = ops.allocate(4L * rows * n)) {
                            ops.rmsNorm(dx.pointer(), withAdd ? da.pointer() : 0L, withAdd2 ? da2.pointer() : 0L,
                                    withWeight ? dw.pointer() : 0L, out.pointer(), rows, n, eps);
                            float[] got = ops.readFloats(out, 0, rows * n);
                            float[] sum = ops.readFloats(dx, 0, rows * n);
                            for (int r = 0; r < rows; r++) {
                                double ss = 0;
                                float[] row = new float[n];
                                for (int i = 0; i < n; i++) {
                                    // the two adds are summed first, as the host sums routed and shared experts
                                    float plus = withAdd2 ? add[r * n + i] + add2[r * n + i] : add[r * n + i];
                                    row[i] = withAdd ? x[r * n + i] + plus : x[r * n + i];
                                    ss += (double) row[i] * row[i];
                                }
                                double inv = 1.0 / Math.sqrt(ss / n + eps);
                                for (int i = 0; i < n; i++) {
                                    assertThat(sum[r * n + i]).as("residual n=%d", n).isEqualTo(row[i]);
                                    float normed = (float) (row[i] * inv);
                                    float want = withWeight ? weight[i] * normed : normed;
                                    assertThat((double) got[r * n + i]).as("n=%d add=%s weight=%s row %d col %d", n,
                                            withAdd, withWeight, r, i).isCloseTo(want, org.assertj.core.data.Offset
                                            .offset(Math.abs(want) * 1e-6 + 1e-30));
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    @Test
    void routerLogitsAreFloat64SumsWithTheBias() {
        SplittableRandom rnd = new SplittableRandom(9);
        int experts = 32;
        try (ModelOps ops = ModelOps.open()) {
            for (int hidden : new int[] {2880, 30, 7168}) { // held float4s, odd width, wider than a block holds
                for (int tokens : new int[] {1, 5}) {
                    float[] x = random(rnd, tokens * hidden, 1.0);
                    float[] w = random(rnd, experts * hidden, 0.05);
                    float[] bias = random(rnd, experts, 0.1);
                    try (DeviceBuffer dx = ops.upload(x); DeviceBuffer dw = ops.upload(w);
                            DeviceBuffer db = ops.upload(bias); DeviceBuffer out = ops.allocate(8L * tokens * experts)) {
                        ops.routerLogits(dx.pointer(), dw.pointer(), db.pointer(), out.pointer(), tokens, experts,
                                hidden);
                        double[] got = ops.readDoubles(out, tokens * experts);
                        for (int t = 0; t < tokens; t++) {
                            for (int e = 0; e < experts; e++) {
                                double want = bias[e];
                                double s = 0;
                                for (int i = 0; i < hidden; i++) {
                                    s += (double) x[t * hidden + i] * w[e * hidden + i];
                                }
                                want += s;
                                assertThat(got[t * experts + e]).as("hidden %d token %d expert %d", hidden, t, e)
                                        .isCloseTo(want, org.assertj.core.data.Offset.offset(1e-12));
                            }
                        }
                    }
                }
            }
        }
    }

    /**
     * The post-attention norm taken in the router's kernel (a decode step's rows): every block's normed row written
     * into xn and its logits against RMSNorm (float64 sum of squares, as model_rms_norm) and float64 sums of exact
     * products computed here; with and without the norm's weight, on each path (held float4s, odd width, wider than a
     * block holds), experts that do not divide the row's float4s; more rows than it takes are refused.
     */
    @Test
    void theNormInTheRouterKernelIsTheNormThenTheLogits() {
        SplittableRandom rnd = new SplittableRandom(10);
        float eps = 1e-5f;
        try (ModelOps ops = ModelOps.open()) {
            for (int hidden : new int[] {2880, 30, 7168}) {
                for (int experts : new int[] {32, 3}) {
                    for (boolean weighted : new boolean[] {true, false}) {
                        int tokens = weighted ? ModelOps.NORM_ROUTER_TOKENS : 1;
                        float[] h = random(rnd, tokens * hidden, 2.0);
                        float[] norm = random(rnd, hidden, 1.0);
                        float[] w = random(rnd, experts * hidden, 0.05);
                        float[] bias = random(rnd, experts, 0.1);
                        try (DeviceBuffer dh = ops.upload(h); DeviceBuffer dn = ops.upload(norm);
                                DeviceBuffer dw = ops.upload(w); DeviceBuffer db = ops.upload(bias);
                                DeviceBuffer xn = ops.allocate(4L * tokens * hidden);
                                DeviceBuffer out = ops.allocate(8L * tokens * experts)) {
                            ops.normRouterLogits(dh.pointer(), weighted ? dn.pointer() : 0L, eps, xn.pointer(),
                                    dw.pointer(), db.pointer(), out.pointer(), tokens, experts, hidden);
                            float[] gotXn = ops.readFloats(xn, 0, tokens * hidden);
                            double[] got = ops.readDoubles(out, tokens * experts);
                            float[] wantXn = new float[tokens * hidden];
                            for (int t = 0; t < tokens; t++) {
                                double sq = 0;
                                for (int i = 0; i < hidden; i++) {
                                    sq += (double) h[t * hidden + i] * h[t * hidden + i];
                                }
                                double inv = 1.0 / Math.sqrt(sq / hidden + eps);
                                for (int i = 0; i < hidden; i++) {
                                    float normed = (float) (h[t * hidden + i] * inv);
                                    wantXn[t * hidden + i] = weighted ? norm[i] * normed : normed;
                                }
                            }
                            String what = String.format("hidden %d, %d experts, weighted %b", hidden, experts,
                                    weighted);
                            assertThat(io.moe4j.testing.Norms.relL2(gotXn, wantXn)).as(what).isLessThan(1e-7);
                            for (int t = 0; t < tokens; t++) {
                                for (int e = 0; e < experts; e++) {
                                    double sum = 0;
                                    double scale = 0;
                                    for (int i = 0; i < hidden; i++) {
                                        double p = (double) wantXn[t * hidden + i] * w[e * hidden + i];
                                        sum += p;
                                        scale += Math.abs(p);
                                    }
                                    assertThat(got[t * experts + e]).as("%s, token %d expert %d", what, t, e)
                                            .isCloseTo(sum + bias[e], org.assertj.core.data.Offset.offset(1e-6 * scale));
                                }
                            }
                        }
                    }
                }
            }
            assertThatThrownBy(() -> ops.normRouterLogits(0L, 0L, eps, 0L, 0L, 0L, 0L,
                    ModelOps.NORM_ROUTER_TOKENS + 1, 32, 2880)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("up to " + ModelOps.NORM_ROUTER_TOKENS + " rows");
        }
    }

    /**
     * model_attend_rows against softmax attention computed here in float64: groups of 1 to 16 query heads a kv head
     * (every warp layout of the block: several warps a head, idle warps, two heads a warp), heads of 32, 64, 80, 128
     * and 256, full, sliding and chunked windows, sinks, a decode row (its span in many pieces, merged by the last
     * block) and three rows at once, run twice (the arrival counters must be left at zero).
     */
    @Test
    void groupedQueryAttentionIsSoftmaxAttention() {
        SplittableRandom rnd = new SplittableRandom(29);
        int positions = 700;
        int kvHeads = 2;
        try (ModelOps ops = ModelOps.open(); Arena arena = Arena.ofConfined()) {
            for (int group : new int[] {1, 4, 5, 8, 12, 16}) {
                for (int headDim : new int[] {32, 64, 80, 128, 256}) {
                    int heads = kvHeads * group;
                    int width = kvHeads * headDim;
                    float[] cache = random(rnd, positions * 2 * width, 1.0);
                    float[] sinks = random(rnd, heads, 1.0);
                    float scale = (float) (1 / Math.sqrt(headDim));
                    for (long[] at : new long[][] {{positions - 1}, {3, 400, positions - 1}}) {
                        for (int window : new int[] {0, 37, -64}) {
                            boolean withSinks = window != -64;
                            int tokens = at.length;
                            int stride = heads * headDim + 2 * width; // q|k|v rows
                            float[] q = random(rnd, tokens * stride, 1.0);
                            try (DeviceBuffer dCache = ops.upload(cache); DeviceBuffer dq = ops.upload(q);
                                    DeviceBuffer dSinks = ops.upload(sinks);
                                    DeviceBuffer out = ops.allocate(4L * tokens * heads * headDim);
                                    DeviceBuffer dPositions = ops.upload(arena.allocateFrom(ValueLayout.JAVA_LONG, at));
                                    DeviceBuffer table = ops.upload(arena.allocateFrom(ValueLayout.JAVA_LONG,
                                            dCache.pointer()));
                                    DeviceBuffer partials = ops.allocate(ops.attendPartialsBytes(tokens, heads,
                                            kvHeads, headDim));
                                    DeviceBuffer arrivals = ops.upload(new float[tokens * kvHeads])) {
                                float[] first = twiceTheSame(() -> {
                                    ops.attendRows(dq.pointer(), stride, table.pointer(), false,
                                            withSinks ? dSinks.pointer() : 0L, out.pointer(), tokens,
                                            dPositions.pointer(), heads, kvHeads, headDim, window, scale,
                                            partials.pointer(), partials.byteSize(), arrivals.pointer(),
                                            arrivals.byteSize(), null);
                                    return ops.readFloats(out, 0, tokens * heads * headDim);
                                });
                                assertThat(attentionError(first, q, stride, cache, at, heads, group, headDim,
                                        window, withSinks ? sinks : null, scale)).as(
                                        "group %d, head %d, rows %d, window %d", group, headDim, tokens, window)
                                        .isLessThan(2e-5);
                            }
                        }
                    }
                }
            }
        }
    }

    /**
     * model_attend_tiles (a prompt's rows, 64 of a query head a block) against softmax attention in float64: groups
     * of 1 to 16, heads of 32, 64, 80 and 128, full, sliding and chunked windows, sinks; 150 consecutive rows from
     * position 250 (two full tiles and a partial one) and rows at scattered positions (each row masked by its own
     * span), run twice (the same output).
     */
    @Test
    void promptRowsAttendedInTilesAreSoftmaxAttention() {
        SplittableRandom rnd = new SplittableRandom(31);
        int positions = 400;
        int kvHeads = 2;
        long[] consecutive = java.util.stream.LongStream.range(250, 400).toArray();
        long[] scattered = {0, 1, 7, 63, 64, 65, 100, 399, 200, 5};
        try (ModelOps ops = ModelOps.open(); Arena arena = Arena.ofConfined()) {
            for (int group : new int[] {1, 5, 8, 16}) {
                for (int headDim : new int[] {32, 64, 80, 128}) {
                    int heads = kvHeads * group;
                    int width = kvHeads * headDim;
                    float[] cache = random(rnd, positions * 2 * width, 1.0);
                    float[] sinks = random(rnd, heads, 1.0);
                    float scale = (float) (1 / Math.sqrt(headDim));
                    for (long[] at : new long[][] {consecutive, scattered}) {
                        for (int window : new int[] {0, 37, -64}) {
                            boolean withSinks = window != -64;
                            int tokens = at.length;
                            int stride = heads * headDim + 2 * width;
                            float[] q = random(rnd, tokens * stride, 1.0);
                            try (DeviceBuffer dCache = ops.upload(cache); DeviceBuffer dq = ops.upload(q);
                                    DeviceBuffer dSinks = ops.upload(sinks);
                                    DeviceBuffer out = ops.allocate(4L * tokens * heads * headDim);
                                    DeviceBuffer dPositions = ops.upload(arena.allocateFrom(ValueLayout.JAVA_LONG, at));
                                    DeviceBuffer table = ops.upload(arena.allocateFrom(ValueLayout.JAVA_LONG,
                                            dCache.pointer()))) {
                                float[] first = twiceTheSame(() -> {
                                    ops.attendTiles(dq.pointer(), stride, table.pointer(),
                                            withSinks ? dSinks.pointer() : 0L, out.pointer(), tokens,
                                            dPositions.pointer(), heads, kvHeads, headDim, window, scale);
                                    return ops.readFloats(out, 0, tokens * heads * headDim);
                                });
                                assertThat(attentionError(first, q, stride, cache, at, heads, group, headDim,
                                        window, withSinks ? sinks : null, scale)).as(
                                        "group %d, head %d, rows %d, window %d", group, headDim, tokens, window)
                                        .isLessThan(2e-5);
                            }
                        }
                    }
                }
            }
        }
    }

    @Test
    void onlyOneSequencesRowsOfTileWidthsAttendInTiles() {
        assertThat(ModelOps.attendsInTiles(false, 64, 64)).isTrue();
        assertThat(ModelOps.attendsInTiles(false, 63, 64)).isFalse(); // fewer rows than a tile
        assertThat(ModelOps.attendsInTiles(true, 4096, 64)).isFalse(); // a batch: a cache a row
        assertThat(ModelOps.attendsInTiles(false, 4096, 80)).isTrue();
        assertThat(ModelOps.attendsInTiles(false, 4096, 76)).isFalse(); // not whole tf32 steps of 8
        assertThat(ModelOps.attendsInTiles(false, 4096, 256)).isFalse();
    }

    /** Runs {@code kernel} twice and returns its output, asserting that the second run gave the same. */
    private static float[] twiceTheSame(java.util.function.Supplier<float[]> kernel) {
        float[] first = kernel.get();
        assertThat(kernel.get()).isEqualTo(first);
        return first;
    }

    /**
     * Relative L2 error of {@code got} [tokens, heads, headDim] against {@link #softmaxAttention} of each row at
     * positions {@code at} (q rows {@code stride} floats apart, kv head h / group, sinks null for none).
     */
    private static double attentionError(float[] got, float[] q, int stride, float[] cache, long[] at, int heads,
                                         int group, int headDim, int window, float[] sinks, float scale) {
        int width = heads / group * headDim;
        double err = 0, norm = 0;
        for (int t = 0; t < at.length; t++) {
            for (int h = 0; h < heads; h++) {
                double[] want = softmaxAttention(q, t * stride + h * headDim, cache, (h / group) * headDim, width,
                        headDim, at[t], window, sinks != null ? sinks[h] : Double.NEGATIVE_INFINITY, scale);
                for (int d = 0; d < headDim; d++) {
                    double e = got[(t * heads + h) * headDim + d] - want[d];
                    err += e * e;
                    norm += want[d] * want[d];
                }
            }
        }
        return Math.sqrt(err / norm);
    }

    /** One query head's attention over cache rows [k | v] (k of this head at kOff, v at width + kOff), in float64. */
    private static double[] softmaxAttention(float[] q, int qAt, float[] cache, int kOff, int width, int headDim,
                                             long position, int window, double sink, float scale) {
        long from = window > 0 ? Math.max(0, position - window + 1) : window < 0 ? position / -window * -window : 0;
        int n = (int) (position - from + 1);
        double[] scores = new double[n];
        double max = sink;
        for (int j = 0; j < n; j++) {
            int row = (int) (from + j) * 2 * width;
            double s = 0;
            for (int d = 0; d < headDim; d++) {
                s += (double) q[qAt + d] * cache[row + kOff + d];
            }
            scores[j] = s * scale;
            max = Math.max(max, scores[j]);
        }
        double total = Math.exp(sink - max);
        double[] out = new double[headDim];
        for (int j = 0; j < n; j++) {
            double p = Math.exp(scores[j] - max);
            total += p;
            int row = (int) (from + j) * 2 * width;
            for (int d = 0; d < headDim; d++) {
                out[d] += p * cache[row + width + kOff + d];
            }
        }
        for (int d = 0; d < headDim; d++) {
            out[d] /= total;
        }
        return out;
    }

    /**
     * model_attend_latent_rows (kv_b_proj taken into the query and the output) against the expanded form computed
     * here in float64: every visible latent through kv_b_proj into a key and a value per head, then softmax
     * attention. Full-width latents (DeepSeek-V3's 512 and 64) and widths that leave lanes idle; more positions than
     * the kernel's warps, queries at several positions of one cache.
     */
    @Test
    void latentAttentionIsTheExpandedAttention() {
        SplittableRandom rnd = new SplittableRandom(23);
        int[][] shapes = {{512, 64, 128, 128, 3}, {200, 34, 48, 72, 2}}; // lora, rope, nope, vDim, heads
        try (ModelOps ops = ModelOps.open(); Arena arena = Arena.ofConfined()) {
            for (int[] shape : shapes) {
                int lora = shape[0], rope = shape[1], nope = shape[2], vDim = shape[3], heads = shape[4];
                int positions = 70;
                long[] at = {0, 37, 69};
                int tokens = at.length;
                float scale = (float) (1 / Math.sqrt(nope + rope));
                float[] cache = random(rnd, positions * (rope + lora), 1.0);
                float[] w = random(rnd, heads * (nope + vDim) * lora, 1 / Math.sqrt(lora));
                float[] q = random(rnd, tokens * heads * (nope + rope), 1.0);
                try (DeviceBuffer dCache = ops.upload(cache); DeviceBuffer dw = ops.upload(w);
                        DeviceBuffer dq = ops.upload(q); DeviceBuffer out = ops.allocate(4L * tokens * heads * vDim);
                        DeviceBuffer dPositions = ops.upload(arena.allocateFrom(ValueLayout.JAVA_LONG, at));
                        DeviceBuffer table = ops.upload(arena.allocateFrom(ValueLayout.JAVA_LONG, dCache.pointer()))) {
                    ops.attendLatentRows(dq.pointer(), dw.pointer(), table.pointer(), false, out.pointer(), tokens,
                            dPositions.pointer(), heads, nope, rope, vDim, lora, scale, null);
                    float[] got = ops.readFloats(out, 0, tokens * heads * vDim);
                    assertThat(latentError(got, q, cache, w, at, heads, nope, rope, vDim, lora, scale))
                            .as("lora %d, rope %d", lora, rope).isLessThan(2e-5);
                }
            }
        }
    }

    /**
     * model_attend_latent_tiles (a prompt's rows, 32 of a head a block) against the expanded attention in float64:
     * DeepSeek-V3's widths and the conformance model's; 40 consecutive rows (a full tile and a partial one) and rows
     * at scattered positions, each masked by its own position.
     */
    @Test
    void promptRowsAttendTheLatentsInTiles() {
        SplittableRandom rnd = new SplittableRandom(37);
        int[][] shapes = {{512, 64, 128, 128, 2}, {128, 32, 64, 64, 4}}; // lora, rope, nope, vDim, heads
        int positions = 70;
        long[] consecutive = java.util.stream.LongStream.range(30, 70).toArray();
        long[] scattered = {0, 5, 69, 33, 34, 1};
        try (ModelOps ops = ModelOps.open(); Arena arena = Arena.ofConfined()) {
            for (int[] shape : shapes) {
                int lora = shape[0], rope = shape[1], nope = shape[2], vDim = shape[3], heads = shape[4];
                assertThat(ModelOps.attendsLatentInTiles(false, 64, nope, rope, lora)).isTrue();
                float scale = (float) (1 / Math.sqrt(nope + rope));
                float[] cache = random(rnd, positions * (rope + lora), 1.0);
                float[] w = random(rnd, heads * (nope + vDim) * lora, 1 / Math.sqrt(lora));
                for (long[] at : new long[][] {consecutive, scattered}) {
                    int tokens = at.length;
                    float[] q = random(rnd, tokens * heads * (nope + rope), 1.0);
                    try (DeviceBuffer dCache = ops.upload(cache); DeviceBuffer dw = ops.upload(w);
                            DeviceBuffer dq = ops.upload(q);
                            DeviceBuffer out = ops.allocate(4L * tokens * heads * vDim);
                            DeviceBuffer dPositions = ops.upload(arena.allocateFrom(ValueLayout.JAVA_LONG, at));
                            DeviceBuffer table = ops.upload(arena.allocateFrom(ValueLayout.JAVA_LONG,
                                    dCache.pointer()))) {
                        float[] got = twiceTheSame(() -> {
                            ops.attendLatentTiles(dq.pointer(), dw.pointer(), table.pointer(), out.pointer(), tokens,
                                    dPositions.pointer(), heads, nope, rope, vDim, lora, scale);
                            return ops.readFloats(out, 0, tokens * heads * vDim);
                        });
                        assertThat(latentError(got, q, cache, w, at, heads, nope, rope, vDim, lora, scale))
                                .as("lora %d, rope %d, rows %d", lora, rope, tokens).isLessThan(2e-5);
                    }
                }
            }
        }
        assertThat(ModelOps.attendsLatentInTiles(false, 64, 48, 34, 200)).isFalse(); // lora not whole warps
        assertThat(ModelOps.attendsLatentInTiles(true, 64, 128, 64, 512)).isFalse(); // a batch's rows
    }

    /** Relative L2 error of {@code got} [tokens, heads, vDim] against {@link #expandedAttention} of each row. */
    private static double latentError(float[] got, float[] q, float[] cache, float[] w, long[] at, int heads, int nope,
                                      int rope, int vDim, int lora, float scale) {
        double err = 0, norm = 0;
        for (int t = 0; t < at.length; t++) {
            for (int h = 0; h < heads; h++) {
                double[] want = expandedAttention(q, cache, w, t, h, (int) at[t], heads, nope, rope, vDim, lora,
                        scale);
                for (int m = 0; m < vDim; m++) {
                    double d = got[(t * heads + h) * vDim + m] - want[m];
                    err += d * d;
                    norm += want[m] * want[m];
                }
            }
        }
        return Math.sqrt(err / norm);
    }

    /** One (token, head) of multi-head latent attention as the reference computes it, in float64. */
    private static double[] expandedAttention(float[] q, float[] cache, float[] w, int t, int h, int position,
                                              int heads, int nope, int rope, int vDim, int lora, float scale) {
        int qAt = (t * heads + h) * (nope + rope);
        int headRow = h * (nope + vDim);
        double[] scores = new double[position + 1];
        double[][] values = new double[position + 1][vDim];
        double max = Double.NEGATIVE_INFINITY;
        for (int j = 0; j <= position; j++) {
            int row = j * (rope + lora);
            double s = 0;
            for (int i = 0; i < nope; i++) {
                double k = 0;
                for (int c = 0; c < lora; c++) {
                    k += (double) w[(headRow + i) * lora + c] * cache[row + rope + c];
                }
                s += q[qAt + i] * k;
            }
            for (int d = 0; d < rope; d++) {
                s += (double) q[qAt + nope + d] * cache[row + d];
            }
            scores[j] = s * scale;
            max = Math.max(max, scores[j]);
            for (int m = 0; m < vDim; m++) {
                double v = 0;
                for (int c = 0; c < lora; c++) {
                    v += (double) w[(headRow + nope + m) * lora + c] * cache[row + rope + c];
                }
                values[j][m] = v;
            }
        }
        double total = 0;
        double[] out = new double[vDim];
        for (int j = 0; j <= position; j++) {
            double p = Math.exp(scores[j] - max);
            total += p;
            for (int m = 0; m < vDim; m++) {
                out[m] += p * values[j][m];
            }
        }
        for (int m = 0; m < vDim; m++) {
            out[m] /= total;
        }
        return out;
    }

    private static float[] random(SplittableRandom rnd, int n, double scale) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) (rnd.nextGaussian() * scale);
        }
        return v;
    }
}
