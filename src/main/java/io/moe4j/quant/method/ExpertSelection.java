package io.moe4j.quant.method;

import io.moe4j.MoeException;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.quant.LoadOptions;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/** Which experts a load holds (expert parallelism) and the rows of stacked tensors that belong to them. */
final class ExpertSelection {
    private ExpertSelection() {
    }

    /** Global ids of the experts to hold, in local order; fails naming a bad id. */
    static int[] localIds(MoeLayerConfig layer, LoadOptions options) {
        int e = layer.numExperts();
        if (options == null || options.holdsAll()) {
            int[] all = new int[e];
            Arrays.setAll(all, i -> i);
            return all;
        }
        int[] ids = options.localExperts().clone();
        if (ids.length == 0) {
            throw new MoeException("layer " + layer.layer() + ": expert parallelism was asked to hold no experts");
        }
        boolean[] seen = new boolean[e];
        for (int id : ids) {
            if (id < 0 || id >= e) {
                throw new MoeException("layer " + layer.layer() + ": local expert " + id + " is out of range (the layer has "
                        + e + " experts)");
            }
            if (seen[id]) {
                throw new MoeException("layer " + layer.layer() + ": local expert " + id + " is listed twice");
            }
            seen[id] = true;
        }
        return ids;
    }

    /** Global → local map (−1 where the expert lives elsewhere), or null when every expert is held. */
    static int[] expertMap(MoeLayerConfig layer, LoadOptions options, int[] ids) {
        if (options == null || options.holdsAll()) {
            return null;
        }
        int[] map = new int[layer.numExperts()];
        Arrays.fill(map, -1);
        for (int i = 0; i < ids.length; i++) {
            map[ids[i]] = i;
        }
        return map;
    }

    /** The first id when ids is a run first, first+1, ...; else −1. */
    static int contiguousStart(int[] ids) {
        for (int i = 1; i < ids.length; i++) {
            if (ids[i] != ids[0] + i) {
                return -1;
            }
        }
        return ids[0];
    }

    /** Rows of a stacked [E, ...] tensor for the local experts: a zero-copy slice when they are contiguous. */
    static MemorySegment selectExperts(Tensor stacked, int[] ids, Arena arena, LoadProgress progress) {
        long perExpert = stacked.segment().byteSize() / stacked.shape()[0];
        int start = contiguousStart(ids);
        if (start >= 0) {
            MemorySegment s = stacked.segment().asSlice(start * perExpert, ids.length * perExpert);
            progress.add(s.byteSize());
            return s;
        }
        MemorySegment out = arena.allocate(perExpert * ids.length, TensorCopies.ALIGN);
        for (int i = 0; i < ids.length; i++) {
            MemorySegment.copy(stacked.segment(), ids[i] * perExpert, out, i * perExpert, perExpert);
            progress.add(perExpert);
        }
        return out;
    }

    /** Rows of a stacked [E, n] float tensor for the local experts, as float32. */
    static float[] expertRows(Tensor stacked, int[] ids) {
        int n = Math.toIntExact(stacked.elementCount() / stacked.shape()[0]);
        float[] out = new float[ids.length * n];
        for (int i = 0; i < ids.length; i++) {
            for (int j = 0; j < n; j++) {
                out[i * n + j] = stacked.getFloat((long) ids[i] * n + j);
            }
        }
        return out;
    }
}
