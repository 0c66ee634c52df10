package io.moe4j.text.tokenizer;

import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The BPE model: turns one pre-token (already in byte-level symbols) into token ids by applying the merges in rank
 * order, exactly as the reference implementation's priority-queue algorithm does (lowest rank first, the leftmost
 * pair among equal ranks, stale queue entries skipped).
 *
 * <p>Results are cached per word: text repeats its words, and a cache hit skips the merge loop entirely. The cache
 * stops growing at {@value #CACHE_CAPACITY} words and ignores words over {@value #CACHE_MAX_WORD} characters, as the
 * reference's does. Instances are immutable apart from that cache and safe to share between threads.
 */
final class BpeModel {
    static final int CACHE_CAPACITY = 10_000;
    static final int CACHE_MAX_WORD = 256;

    private final Map<String, Integer> vocab;
    private final MergeTable merges;
    private final boolean ignoreMerges;
    private final boolean byteFallback;
    /** The id of the unknown token, or -1 when the model has none (then unknown symbols are dropped). */
    private final int unkId;
    private final boolean fuseUnk;
    private final String continuingSubwordPrefix;
    private final String endOfWordSuffix;
    private final ConcurrentHashMap<String, int[]> cache = new ConcurrentHashMap<>();

    BpeModel(Map<String, Integer> vocab, MergeTable merges, boolean ignoreMerges, boolean byteFallback, int unkId,
             boolean fuseUnk, String continuingSubwordPrefix, String endOfWordSuffix) {
        this.vocab = vocab;
        this.merges = merges;
        this.ignoreMerges = ignoreMerges;
        this.byteFallback = byteFallback;
        this.unkId = unkId;
        this.fuseUnk = fuseUnk;
        this.continuingSubwordPrefix = continuingSubwordPrefix == null ? "" : continuingSubwordPrefix;
        this.endOfWordSuffix = endOfWordSuffix == null ? "" : endOfWordSuffix;
    }

    Map<String, Integer> vocab() {
        return vocab;
    }

    /** Appends the ids of one word to {@code out}. */
    void encodeWord(String word, IntList out) {
        if (word.isEmpty()) {
            return;
        }
        if (ignoreMerges) {
            // A word that is itself a token is taken whole, even where the merges would not build it.
            Integer whole = vocab.get(word);
            if (whole != null) {
                out.add(whole);
                return;
            }
        }
        int[] cached = cache.get(word);
        if (cached == null) {
            cached = merge(word);
            if (word.length() < CACHE_MAX_WORD && cache.size() < CACHE_CAPACITY) {
                cache.putIfAbsent(word, cached);
            }
        }
        out.addAll(cached);
    }

    /** The initial symbols of a word (one per character, with byte fallback and unknown handling) merged fully. */
    private int[] merge(String word) {
        IntList symbols = new IntList();
        boolean pendingUnk = false; // an unknown symbol not yet emitted (consecutive ones may fuse into it)
        int i = 0;
        while (i < word.length()) {
            int end = i + Character.charCount(word.codePointAt(i));
            String s = word.substring(i, end);
            if (i > 0 && !continuingSubwordPrefix.isEmpty()) {
                s = continuingSubwordPrefix + s;
            }
            if (end == word.length() && !endOfWordSuffix.isEmpty()) {
                s = s + endOfWordSuffix;
            }
            i = end;
            Integer id = vocab.get(s);
            if (id != null) {
                if (pendingUnk) {
                    symbols.add(unkId);
                    pendingUnk = false;
                }
                symbols.add(id);
                continue;
            }
            if (byteFallback) {
                int[] bytes = byteFallbackIds(s);
                if (bytes != null) {
                    symbols.addAll(bytes);
                    continue;
                }
            }
            if (unkId >= 0) {
                if (pendingUnk && !fuseUnk) {
                    symbols.add(unkId);
                }
                pendingUnk = true;
            }
        }
        if (pendingUnk) {
            symbols.add(unkId);
        }
        return mergeAll(symbols.toArray());
    }

    /** The {@code <0xAB>} tokens of each UTF-8 byte of {@code s}, or null if any is missing. */
    private int[] byteFallbackIds(String s) {
        byte[] bytes = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        int[] ids = new int[bytes.length];
        for (int k = 0; k < bytes.length; k++) {
            Integer id = vocab.get(String.format("<0x%02X>", bytes[k] & 0xFF));
            if (id == null) {
                return null;
            }
            ids[k] = id;
        }
        return ids;
    }

    /**
     * Merges the symbols: a min-heap of candidate pairs keyed by (rank, position of the left symbol) over a doubly
     * linked list of symbols. An entry is stale when its left symbol was merged away or the pair at its position
     * changed since it was queued; those are skipped, as in the reference. The reference recognises a changed pair by
     * its merged id; a symbol only ever grows to the right, so a changed pair always spans more text and therefore
     * differs in rank as well, and comparing ranks is the same test.
     */
    private int[] mergeAll(int[] ids) {
        int n = ids.length;
        if (n < 2) {
            return ids;
        }
        int[] prev = new int[n];
        int[] next = new int[n];
        boolean[] removed = new boolean[n];
        for (int k = 0; k < n; k++) {
            prev[k] = k - 1;
            next[k] = k + 1 < n ? k + 1 : -1;
        }
        LongHeap heap = new LongHeap(n);
        for (int k = 0; k + 1 < n; k++) {
            long m = merges.get(ids[k], ids[k + 1]);
            if (m >= 0) {
                heap.push((m & ~0xFFFFFFFFL) | k);
            }
        }
        while (!heap.isEmpty()) {
            long top = heap.pop();
            int pos = (int) top;
            int right = next[pos];
            if (removed[pos] || right < 0) {
                continue;
            }
            long m = merges.get(ids[pos], ids[right]);
            if (m < 0 || (m >>> 32) != (top >>> 32)) {
                continue;
            }
            ids[pos] = (int) m;
            removed[right] = true;
            next[pos] = next[right];
            if (next[right] >= 0) {
                prev[next[right]] = pos;
            }
            if (prev[pos] >= 0) {
                long left = merges.get(ids[prev[pos]], ids[pos]);
                if (left >= 0) {
                    heap.push((left & ~0xFFFFFFFFL) | prev[pos]);
                }
            }
            if (next[pos] >= 0) {
                long after = merges.get(ids[pos], ids[next[pos]]);
                if (after >= 0) {
                    heap.push((after & ~0xFFFFFFFFL) | pos);
                }
            }
        }
        int count = 0;
        for (int k = 0; k >= 0; k = next[k]) {
            ids[count++] = ids[k];
        }
        return Arrays.copyOf(ids, count);
    }
}
