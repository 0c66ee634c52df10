// moe4j: the layer's router on the device, with io.moe4j.routing.Router's rules.
//   moe_router_logits_rows  decode batches: one block per expert, every token of the batch (at most ROUTER_TOKENS)
//   moe_router_logits_tile  larger batches: 64 tokens x 64 experts x a slice of the columns a block
//   moe_router_select       one warp per token: scores, DeepSeek's group mask, top-k, weights, sorted by expert
//   moe_route_plan          the experts' routing plan from the choices, on the device (a decode step's graph)
// moe_router_select and moe_route_plan follow the overlapped-launch protocol of moe4j_common.cuh.
// Logits are float64 sums of float x times float weights (exact products), like the host router: routers sit close
// to ties, and the reference computes them in float64. Only the order of the sums differs from the host.
#include "moe4j_common.cuh"

#define ROUTER_TOKENS 16     // the most tokens moe_router_logits_rows takes (its partial sums per thread)
// Experts per lane in moe_router_select: at most 512 experts. The host compiles the kernel per router with
// ROUTER_PER_LANE = ceil(E / 32) and MOE4J_ROUTER_KIND set, so that it holds only that router's code: one warp on
// the critical path of a decode step, it spent 44% of its cycles waiting for instructions (ncu, H200) with every
// kind's branches and sixteen slots a lane.
#ifndef ROUTER_PER_LANE
#define ROUTER_PER_LANE 16
#endif
#define ROUTER_MAX_K 32      // the most choices per token

// -infinity without math headers (NVRTC)
#define NEG_INF __longlong_as_double(0xfff0000000000000LL)

#define KIND_SOFTMAX_TOPK 0
#define KIND_TOPK_SOFTMAX 1
#define KIND_SIGMOID_GROUPED 2
#define KIND_SIGMOID_TOP1 3

__device__ __forceinline__ double warp_sum_d(double v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ double warp_max_d(double v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Decode batches (T <= ROUTER_TOKENS): one block per expert, its 256 threads striding over the router row with
// one partial sum per token, then a fixed-order reduction (warps, then the block's 8 warp sums): logits[t * E + e]
// without the bias, which moe_router_select adds.
extern "C" __global__ void __launch_bounds__(256)
moe_router_logits_rows(const float* __restrict__ x, const float* __restrict__ w, double* __restrict__ logits, int T,
                       int E, int H) {
    __shared__ double sums[8][ROUTER_TOKENS];
    const int e = blockIdx.x;
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    double acc[ROUTER_TOKENS];
#pragma unroll
    for (int t = 0; t < ROUTER_TOKENS; t++) acc[t] = 0.0;
    const float* row = w + (size_t)e * H;
    if ((H & 3) == 0) {
        const float4* row4 = reinterpret_cast<const float4*>(row);
#pragma unroll 4
        for (int c = threadIdx.x; c < H / 4; c += 256) {
            const float4 wv = row4[c];
#pragma unroll
            for (int t = 0; t < ROUTER_TOKENS; t++) {
                if (t < T) {
                    const float4 xv = reinterpret_cast<const float4*>(x + (size_t)t * H)[c];
                    acc[t] = fma((double)wv.x, (double)xv.x, acc[t]);
                    acc[t] = fma((double)wv.y, (double)xv.y, acc[t]);
                    acc[t] = fma((double)wv.z, (double)xv.z, acc[t]);
                    acc[t] = fma((double)wv.w, (double)xv.w, acc[t]);
                }
            }
        }
    } else {
#pragma unroll 4
        for (int c = threadIdx.x; c < H; c += 256) {
            const double wv = row[c];
#pragma unroll
            for (int t = 0; t < ROUTER_TOKENS; t++) {
                if (t < T) acc[t] = fma(wv, (double)x[(size_t)t * H + c], acc[t]);
            }
        }
    }
#pragma unroll
    for (int t = 0; t < ROUTER_TOKENS; t++) {
        if (t < T) {
            const double v = warp_sum_d(acc[t]);
            if (lane == 0) sums[warp][t] = v;
        }
    }
    __syncthreads();
    if (threadIdx.x < T) {
        double v = 0.0;
#pragma unroll
        for (int i = 0; i < 8; i++) v += sums[i][threadIdx.x];
        logits[(size_t)threadIdx.x * E + e] = v;
    }
}

// Any T: a block multiplies 64 tokens by 64 router rows over one slice of the columns (blockIdx.z of gridDim.z,
// so that small grids still fill the GPU), in chunks of 16 columns staged in shared memory as doubles; thread
// (tx, ty) accumulates tokens ty + 16 i and experts tx + 16 j. Partial sums go to logits[z][t][e]; the select
// kernel adds the slices in order.
#define RT_TILE 64
#define RT_CHUNK 16
extern "C" __global__ void __launch_bounds__(256)
moe_router_logits_tile(const float* __restrict__ x, const float* __restrict__ w, double* __restrict__ logits, int T,
                       int E, int H) {
    __shared__ double xs[RT_CHUNK][RT_TILE];
    __shared__ double ws[RT_CHUNK][RT_TILE];
    const int t0 = blockIdx.y * RT_TILE;
    const int e0 = blockIdx.x * RT_TILE;
    const int tx = threadIdx.x & 15;
    const int ty = threadIdx.x >> 4;
    const int chunks = (H + RT_CHUNK - 1) / RT_CHUNK;
    const int per = (chunks + gridDim.z - 1) / gridDim.z;
    const int cBegin = blockIdx.z * per * RT_CHUNK;
    const int cEnd = min(H, cBegin + per * RT_CHUNK);
    double acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0;
    for (int c0 = cBegin; c0 < cEnd; c0 += RT_CHUNK) {
        // 64 rows x 16 columns of each operand, four elements a thread, stored column-major as doubles
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const int idx = threadIdx.x + 256 * r;
            const int row = idx >> 4;
            const int col = idx & 15;
            const int c = c0 + col;
            const int t = t0 + row;
            const int e = e0 + row;
            xs[col][row] = t < T && c < cEnd ? (double)x[(size_t)t * H + c] : 0.0;
            ws[col][row] = e < E && c < cEnd ? (double)w[(size_t)e * H + c] : 0.0;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < RT_CHUNK; k++) {
            double a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; i++) a[i] = xs[k][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < 4; j++) b[j] = ws[k][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    double* out = logits + (size_t)blockIdx.z * T * E;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int t = t0 + ty + 16 * i;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int e = e0 + tx + 16 * j;
            if (t < T && e < E) out[(size_t)t * E + e] = acc[i][j];
        }
    }
}

__device__ __forceinline__ double sigmoid_d(double v) {
    return 1.0 / (1.0 + exp(-v));
}

// The warp's best (value, expert) among experts e = lane + 32 j not yet taken (bit j of `taken`): the larger value
// wins, ties go to the lower expert, like Router.topK. Every lane gets the answer.
__device__ __forceinline__ int warp_argmax(const double* v, int E, u32 taken, int lane) {
    int best = -1;
    double bestV = 0.0;
    for (int j = 0; j < ROUTER_PER_LANE; j++) {
        const int e = lane + 32 * j;
        if (e < E && !(taken >> j & 1u) && (best < 0 || v[e] > bestV)) {
            best = e;
            bestV = v[e];
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const int other = __shfl_xor_sync(0xffffffffu, best, o);
        const double otherV = __shfl_xor_sync(0xffffffffu, bestV, o);
        const bool take = other >= 0
                && (best < 0 || otherV > bestV || (!(bestV > otherV) && other < best));
        if (take) {
            best = other;
            bestV = otherV;
        }
    }
    return best;
}

// One warp per token. `l` holds its logits, `choice` what top-k ranks (scores, or logits, or DeepSeek's corrected
// scores with the groups outside the best ones at -inf) and `score` what the weights come from; all three in shared
// memory, E each.
// With `plan` (not null; the host passes it only for a pass of one token, whose plan has no GEMV pieces), the
// routing plan that moe_route_plan would make from these choices is written here too, so that the experts' first
// GEMM follows the selection directly instead of waiting for a plan kernel: plan is moe_route_plan's meta (pairToken,
// pairExpert, pairWeight, tokenPair, tokenWeight, identity, each planSpan ints apart, then the batches), planRoutes
// its routes.
extern "C" __global__ void __launch_bounds__(128)
moe_router_select(const double* __restrict__ logits, int slices, const float* __restrict__ bias,
                  const float* __restrict__ correction, int* __restrict__ ids, float* __restrict__ weights, int T,
                  int E, int K, int kindArg, int renormalize, int groups, int topkGroups, double scaling,
                  int early, int* __restrict__ plan, int planSpan, int2* __restrict__ planRoutes,
                  int routesByToken) {
    allow_next_grid_if(early);
#ifdef MOE4J_ROUTER_KIND
    const int kind = MOE4J_ROUTER_KIND; // the other kinds' code is left out
#else
    const int kind = kindArg;
#endif
    enter_after_prior_grid(); // the logits come from the kernel before (a recorded decode step)
    extern __shared__ double smem[];
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const int t = blockIdx.x * (blockDim.x >> 5) + warp;
    if (t >= T) return; // the whole warp
    double* choice = smem + (size_t)warp * 3 * E;
    double* score = choice + E;
    double* l = score + E; // the token's logits: column slices summed in order, + bias
    for (int e = lane; e < E; e += 32) {
        double v = 0.0;
        for (int z = 0; z < slices; z++) v += logits[((size_t)z * T + t) * E + e];
        l[e] = v + (bias == nullptr ? 0.0 : (double)bias[e]);
    }
    __syncwarp();

    if (kind == KIND_SOFTMAX_TOPK) {
        double m = NEG_INF;
        for (int e = lane; e < E; e += 32) m = fmax(m, l[e]);
        m = warp_max_d(m);
        double s = 0.0;
        for (int e = lane; e < E; e += 32) {
            score[e] = exp(l[e] - m);
            s += score[e];
        }
        s = warp_sum_d(s);
        for (int e = lane; e < E; e += 32) {
            score[e] /= s;
            choice[e] = score[e];
        }
    } else if (kind == KIND_SIGMOID_GROUPED) {
        for (int e = lane; e < E; e += 32) {
            score[e] = sigmoid_d(l[e]);
            choice[e] = score[e] + (correction == nullptr ? 0.0 : (double)correction[e]);
        }
    } else {
        for (int e = lane; e < E; e += 32) choice[e] = l[e];
    }
    __syncwarp();

    if (kind == KIND_SIGMOID_GROUPED && groups > 1) {
        // lane g ranks group g by the sum of its two best choices; the topkGroups best groups stay
        const int perGroup = E / groups;
        double groupScore = NEG_INF;
        if (lane < groups) {
            double best = NEG_INF, second = NEG_INF;
            for (int e = lane * perGroup; e < (lane + 1) * perGroup; e++) {
                const double v = choice[e];
                if (v > best) {
                    second = best;
                    best = v;
                } else if (v > second) {
                    second = v;
                }
            }
            groupScore = best + second;
        }
        u32 kept = 0;
        for (int r = 0; r < topkGroups; r++) {
            int g = lane < groups && !(kept >> lane & 1u) ? lane : -1;
            double gv = groupScore;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) {
                const int other = __shfl_xor_sync(0xffffffffu, g, o);
                const double otherV = __shfl_xor_sync(0xffffffffu, gv, o);
                if (other >= 0 && (g < 0 || otherV > gv || (!(gv > otherV) && other < g))) {
                    g = other;
                    gv = otherV;
                }
            }
            kept |= 1u << g;
        }
        for (int e = lane; e < E; e += 32) {
            if (!(kept >> (e / perGroup) & 1u)) choice[e] = NEG_INF;
        }
        __syncwarp();
    }

    // Choice j stays with lane j (K <= 32): the weights, their sum and each choice's place in expert order are then
    // a few shuffles, where one lane walking arrays of K took them from local memory one dependent load at a time.
    u32 taken = 0;
    int mine = -1;
    for (int j = 0; j < K; j++) {
        const int best = warp_argmax(choice, E, taken, lane);
        if (lane == j) mine = best;
        if ((best & 31) == lane) taken |= 1u << (best >> 5);
    }
    const bool holds = lane < K;
    double wt = 0.0;
    if (kind == KIND_TOPK_SOFTMAX) {
        const double m = warp_max_d(holds ? l[mine] : NEG_INF);
        wt = holds ? exp(l[mine] - m) : 0.0;
    } else if (kind == KIND_SIGMOID_TOP1) {
        wt = holds ? sigmoid_d(l[mine]) : 0.0;
    } else {
        wt = holds ? score[mine] : 0.0;
    }
    if (kind == KIND_TOPK_SOFTMAX || renormalize && kind != KIND_SIGMOID_TOP1) {
        double sum = kind == KIND_SIGMOID_GROUPED ? 1e-20 : 0.0;
        for (int j = 0; j < K; j++) sum += __shfl_sync(0xffffffffu, wt, j); // in choice order, as the host sums
        wt /= sum;
    }
    if (kind == KIND_SIGMOID_GROUPED) wt *= scaling;
    // each token's choices sorted by expert id: a choice's place is the number of chosen experts below it (distinct)
    int rank = 0;
    for (int j = 0; j < K; j++) rank += __shfl_sync(0xffffffffu, mine, j) < mine ? 1 : 0;
    if (holds) {
        ids[(size_t)t * K + rank] = mine;
        weights[(size_t)t * K + rank] = (float)wt;
        if (plan != nullptr) {
            // One token's choices are distinct and sorted by expert, so each expert has one pair and pair j is
            // choice j: the slot moe_route_plan gives it (its expert's start) is j.
            const int j = rank;
            const int e = mine;
            const float wj = (float)wt;
            plan[j] = 0;                                              // pairToken
            plan[planSpan + j] = e;                                   // pairExpert
            reinterpret_cast<float*>(plan)[2 * planSpan + j] = wj;    // pairWeight
            plan[3 * planSpan + j] = j;                               // tokenPair
            reinterpret_cast<float*>(plan)[4 * planSpan + j] = wj;    // tokenWeight
            plan[5 * planSpan + j] = j;                               // identity
            reinterpret_cast<int4*>(plan + 6 * planSpan)[j] = make_int4(e, j, 1, 0);
            planRoutes[j] = make_int2(e, routesByToken ? 0 : j);
            planRoutes[K + j] = make_int2(e, j);
        }
    }
}

// The routing plan CudaExperts builds on the host (RoutePlan), built here from moe_router_select's choices so that
// a pass needs no host round trip: the P = T * K (token, choice) pairs grouped by expert, stable in token order (as
// TokenGroups groups them), every expert local. Written into `meta` at the offsets the expert kernels read:
// pairToken, pairExpert, pairWeight [P]; tokenPair, tokenWeight [T * K]; identity [P]; batches: the CUDA-core GEMM's
// batches, each expert's pairs cut into pieces of at most batchSize as int4 (expert, first pair, count, 0) (one a
// pair when batchSize is 1). routes [2P] int2: GEMM1's (expert, token or pair), then GEMM2's (expert, pair). With
// maxPieces > 0, also each expert's pairs cut into pieces of at most pieceSize (as RoutePlan.pieces): the tensor-core
// GEMV's pieces (pieceSize 4) or the tile GEMMs' M tiles (pieceSize their tokens). Batches and pieces are padded with
// empty ones (count 0) to maxBatches and maxPieces, the recorded grids.
//
// One block of W warps. Warp w takes the w-th stretch of the pairs in order: it counts its pairs an expert, the
// counts are summed over the warps in order (an expert's start, and each warp's first slot in it), and the warp walks
// its stretch again, 32 pairs a step, a pair's slot its warp's next slot for the expert plus the lanes below it with
// the same expert (match.any). The slots therefore follow the pair order whatever the timing, in O(P / W) steps a
// warp (a prompt's pass may hold tens of thousands of pairs).
// grid: 1; block: 32 W; shared: 4 (4 + W) E bytes
extern "C" __global__ void __launch_bounds__(1024)
moe_route_plan(const int* __restrict__ ids, const float* __restrict__ weights, int T, int K, int E,
               int* __restrict__ pairToken, int* __restrict__ pairExpert, float* __restrict__ pairWeight,
               int* __restrict__ tokenPair, float* __restrict__ tokenWeight, int* __restrict__ identity,
               int4* __restrict__ batches, int2* __restrict__ routes, int routesByToken, int batchSize,
               int maxBatches, int4* __restrict__ pieces, int maxPieces, int pieceSize, int early) {
    allow_next_grid_if(early);
    enter_after_prior_grid();
    extern __shared__ int counts[]; // [E] counts, [E] starts, [E] first batches, [E] first pieces, [W][E] next slots
    int* starts = counts + E;
    int* firstBatch = starts + E;
    int* firstPiece = firstBatch + E;
    int* next = firstPiece + E;
    const int P = T * K;
    const int warps = blockDim.x >> 5;
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const int stretch = (P + warps - 1) / warps;
    const int begin = min(P, warp * stretch);
    const int end = min(P, begin + stretch);
    for (int i = threadIdx.x; i < warps * E; i += blockDim.x) next[i] = 0;
    __syncthreads();
    for (int p0 = begin; p0 < end; p0 += 32) {
        const int p = p0 + lane;
        const int e = p < end ? ids[p] : -1;
        const unsigned same = __match_any_sync(0xffffffffu, e);
        if (e >= 0 && lane == __ffs(same) - 1) next[warp * E + e] += __popc(same);
    }
    __syncthreads();
    for (int e = threadIdx.x; e < E; e += blockDim.x) {
        int c = 0;
        for (int w = 0; w < warps; w++) {
            const int v = next[w * E + e];
            next[w * E + e] = c;
            c += v;
        }
        counts[e] = c;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int at = 0, batch = 0, piece = 0;
        for (int e = 0; e < E; e++) {
            starts[e] = at;
            firstBatch[e] = batch;
            firstPiece[e] = piece;
            at += counts[e];
            batch += (counts[e] + batchSize - 1) / batchSize;
            piece += (counts[e] + pieceSize - 1) / pieceSize;
        }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < E; e += blockDim.x) {
        for (int w = 0; w < warps; w++) next[w * E + e] += starts[e];
        for (int i = 0; batchSize * i < counts[e]; i++) {
            batches[firstBatch[e] + i] =
                make_int4(e, starts[e] + batchSize * i, min(batchSize, counts[e] - batchSize * i), 0);
        }
        if (maxPieces > 0) {
            for (int i = 0; pieceSize * i < counts[e]; i++) {
                pieces[firstPiece[e] + i] =
                    make_int4(e, starts[e] + pieceSize * i, min(pieceSize, counts[e] - pieceSize * i), 0);
            }
        }
    }
    const int usedBatches = firstBatch[E - 1] + (counts[E - 1] + batchSize - 1) / batchSize;
    for (int i = usedBatches + threadIdx.x; i < maxBatches; i += blockDim.x) batches[i] = make_int4(0, 0, 0, 0);
    if (maxPieces > 0) {
        const int used = firstPiece[E - 1] + (counts[E - 1] + pieceSize - 1) / pieceSize;
        for (int i = used + threadIdx.x; i < maxPieces; i += blockDim.x) pieces[i] = make_int4(0, 0, 0, 0);
    }
    __syncthreads();
    int* mine = next + warp * E;
    for (int p0 = begin; p0 < end; p0 += 32) {
        const int p = p0 + lane;
        const bool in = p < end;
        const int e = in ? ids[p] : -1;
        const unsigned same = __match_any_sync(0xffffffffu, e);
        const int below = __popc(same & ((1u << lane) - 1u));
        if (in) {
            const int slot = mine[e] + below;
            const int t = p / K;
            const float wt = weights[p];
            pairToken[slot] = t;
            pairExpert[slot] = e;
            pairWeight[slot] = wt;
            tokenPair[p] = slot;
            tokenWeight[p] = wt;
            identity[p] = p;
            routes[slot] = make_int2(e, routesByToken ? t : slot);
            routes[P + slot] = make_int2(e, slot);
        }
        __syncwarp();
        if (in && below == 0) mine[e] += __popc(same);
        __syncwarp();
    }
}
