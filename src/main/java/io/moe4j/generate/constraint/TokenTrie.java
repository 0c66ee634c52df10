package io.moe4j.generate.constraint;

import java.util.Arrays;

/**
 * The vocabulary's non-special tokens as a byte trie, built once per tokenizer and shared by every constrained
 * sequence. Nodes are stored in preorder, so the subtree of node n is the range [n, n + size[n]) and its children
 * are found by hopping over their subtrees; a walk that rejects a byte skips the whole range at once.
 *
 * <p>Strings get a shortcut: most tokens are plain string content (no quote, no backslash left open, no control
 * byte, whole UTF-8 characters), and plain content leaves a string state as it is. For a state inside a string,
 * all plain tokens are allowed or refused together ({@link #plainTokens()}), and the walk only enters subtrees that
 * hold some other token ({@link #hasNonPlain}).
 */
public final class TokenTrie {
    private final int vocabularySize;
    private final byte[] label;      // the byte on the edge into each node (root: unused)
    private final int[] size;        // nodes in each subtree, itself included
    private final int[] firstToken;  // a token ending at each node, or -1
    private final int[] nextToken;   // per token id: another token with the same bytes, or -1
    private final boolean[] hasNonPlain;
    private final boolean[] plain;   // per token id

    public TokenTrie(TokenVocabulary vocabulary) {
        int n = vocabulary.size();
        this.vocabularySize = n;
        byte[][] bytes = new byte[n][];
        Integer[] order = new Integer[n];
        int count = 0;
        long totalBytes = 0;
        for (int id = 0; id < n; id++) {
            byte[] b = vocabulary.isSpecial(id) ? null : vocabulary.bytes(id);
            if (b != null && b.length > 0) {
                bytes[id] = b;
                order[count++] = id;
                totalBytes += b.length;
            }
        }
        Arrays.sort(order, 0, count, (x, y) -> Arrays.compareUnsigned(bytes[x], bytes[y]));
        int capacity = (int) Math.min(Integer.MAX_VALUE - 8, totalBytes + 1);
        byte[] lab = new byte[capacity];
        int[] parent = new int[capacity];
        int[] first = new int[capacity];
        Arrays.fill(first, -1);
        this.nextToken = new int[n];
        Arrays.fill(nextToken, -1);
        // Preorder construction over the sorted strings: keep the path of the previous string, cut it back to the
        // common prefix, append nodes for the rest.
        int[] path = new int[1];
        path[0] = 0;
        int nodes = 1;
        parent[0] = -1;
        byte[] previous = new byte[0];
        for (int k = 0; k < count; k++) {
            int id = order[k];
            byte[] b = bytes[id];
            int common = Arrays.mismatch(previous, b);
            if (common < 0) {
                common = b.length; // the same bytes as the previous token
            }
            if (path.length < b.length + 1) {
                path = Arrays.copyOf(path, Math.max(b.length + 1, path.length * 2));
            }
            for (int d = common; d < b.length; d++) {
                lab[nodes] = b[d];
                parent[nodes] = path[d];
                path[d + 1] = nodes++;
            }
            int node = path[b.length];
            nextToken[id] = first[node];
            first[node] = id;
            previous = b;
        }
        this.label = Arrays.copyOf(lab, nodes);
        this.firstToken = Arrays.copyOf(first, nodes);
        this.size = new int[nodes];
        this.plain = new boolean[n];
        for (int id = 0; id < n; id++) {
            plain[id] = bytes[id] != null && isPlain(bytes[id]);
        }
        this.hasNonPlain = new boolean[nodes];
        for (int v = nodes - 1; v >= 0; v--) {
            size[v] += 1;
            for (int t = firstToken[v]; t >= 0; t = nextToken[t]) {
                hasNonPlain[v] |= !plain[t];
            }
            if (v > 0) {
                size[parent[v]] += size[v];
                hasNonPlain[parent[v]] |= hasNonPlain[v];
            }
        }
    }

    /** Plain string content: from plain string state, these bytes come back to it without closing the string. */
    static boolean isPlain(byte[] bytes) {
        StringFrame s = StringFrame.NORMAL_STATE;
        for (byte b : bytes) {
            s = StringFrame.next(s, b & 0xFF);
            if (s == null || s == StringFrame.CLOSED) {
                return false;
            }
        }
        return s.isPlain();
    }

    /**
     * Entry i: the fewest tokens whose bytes spell piece[i..] (a byte with no token of its own counts one, as the
     * byte reckoning does); entry piece.length is 0.
     */
    int[] suffixTokens(byte[] piece) {
        int n = piece.length;
        int[] best = new int[n + 1];
        for (int i = n - 1; i >= 0; i--) {
            best[i] = 1 + best[i + 1];
            int node = 0;
            for (int j = i; j < n; j++) {
                node = child(node, piece[j]);
                if (node < 0) {
                    break;
                }
                if (firstToken[node] >= 0) {
                    best[i] = Math.min(best[i], 1 + best[j + 1]);
                }
            }
        }
        return best;
    }

    /** The child of {@code node} along byte b, or -1. */
    private int child(int node, byte b) {
        int end = node + size[node];
        for (int c = node + 1; c < end; c += size[c]) {
            if (label[c] == b) {
                return c;
            }
        }
        return -1;
    }

    public int vocabularySize() {
        return vocabularySize;
    }

    public int nodeCount() {
        return label.length;
    }

    /** Per token id: plain string content (see the class comment). Do not modify. */
    boolean[] plainTokens() {
        return plain;
    }

    /**
     * Marks in {@code mask} every token whose bytes take {@code state} to a valid state whose shortest completion
     * is at most {@code maxCost} bytes; the mask must be cleared (or hold the plain tokens, with {@code skipPlain})
     * beforehand.
     *
     * @param skipPlain the state is plain string content and the plain tokens are already marked: subtrees of plain
     *                  tokens only are not entered
     * @param cut       cut[0] is set when a token that continues the document was left out for its cost alone
     * @return trie nodes visited (for measurements)
     */
    int mark(JsonState state, int maxCost, boolean skipPlain, boolean[] mask, boolean[] cut) {
        return walk(0, state, maxCost, skipPlain, mask, cut);
    }

    private int walk(int node, JsonState state, int maxCost, boolean skipPlain, boolean[] mask, boolean[] cut) {
        int visited = 0;
        int end = node + size[node];
        for (int child = node + 1; child < end; child += size[child]) {
            if (skipPlain && !hasNonPlain[child]) {
                continue;
            }
            visited++;
            JsonState next = state.advance(label[child] & 0xFF);
            if (next == null) {
                continue;
            }
            if (firstToken[child] >= 0) {
                if (next.cost() <= maxCost) {
                    for (int t = firstToken[child]; t >= 0; t = nextToken[t]) {
                        mask[t] = true;
                    }
                } else {
                    cut[0] = true;
                }
            }
            if (size[child] > 1) {
                visited += walk(child, next, maxCost, skipPlain, mask, cut);
            }
        }
        return visited;
    }
}
