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
    /** Per token id: its characters where plain, -1 otherwise (length rules count them). */
    private final int[] plainLength;
    private final int maxTokenBytes;

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
        int longest = 0;
        for (int k = 0; k < count; k++) {
            longest = Math.max(longest, bytes[order[k]].length);
        }
        this.maxTokenBytes = longest;
        this.label = Arrays.copyOf(lab, nodes);
        this.firstToken = Arrays.copyOf(first, nodes);
        this.size = new int[nodes];
        this.plain = new boolean[n];
        this.plainLength = new int[n];
        for (int id = 0; id < n; id++) {
            plain[id] = bytes[id] != null && isPlain(bytes[id]);
            plainLength[id] = plain[id] ? codePoints(bytes[id]) : -1;
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
     * The characters plain string content spells: each escape ({@code \\n}, {@code \\u00e9}) is one, as is each
     * UTF-8 character.
     */
    private static int codePoints(byte[] plain) {
        int n = 0;
        for (int i = 0; i < plain.length; i++) {
            if (plain[i] == '\\') {
                i += plain[i + 1] == 'u' ? 5 : 1;
                n++;
            } else if ((plain[i] & 0xC0) != 0x80) {
                n++;
            }
        }
        return n;
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

    /**
     * The end-of-sequence ids a constraint of {@code vocabulary} over this trie may end its answer with, checked: the
     * trie built for that vocabulary, at least one id, each inside it.
     *
     * @param what the answer, for the message (a JSON document, a text)
     */
    int[] checkedEndTokens(TokenVocabulary vocabulary, int[] endTokens, String what) {
        if (vocabularySize != vocabulary.size()) {
            throw new io.moe4j.MoeException("token trie built for " + vocabularySize + " tokens, vocabulary has "
                    + vocabulary.size());
        }
        if (endTokens.length == 0) {
            throw new io.moe4j.MoeException("a constraint needs the end-of-sequence token id(s) that end " + what);
        }
        for (int id : endTokens) {
            if (id < 0 || id >= vocabulary.size()) {
                throw new io.moe4j.MoeException("end token id " + id + " outside the vocabulary of "
                        + vocabulary.size());
            }
        }
        return endTokens.clone();
    }

    /** Bytes of the longest token in the trie. */
    public int maxTokenBytes() {
        return maxTokenBytes;
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

    /** Per token id: the characters its bytes spell where plain string content, -1 otherwise. Do not modify. */
    int[] plainLengths() {
        return plainLength;
    }

    /**
     * Per token id, the state {@code rule} reaches from {@code state} along a plain token's characters (string content,
     * see {@link #isPlain}), or {@link StringRule#DEAD} where it refuses one or the token is not plain. Walks the trie
     * with the rule's state and the character under way as plain ints, leaving a subtree at the first character the
     * rule refuses.
     */
    int[] plainEnds(StringRule rule, int state) {
        int[] ends = new int[vocabularySize];
        Arrays.fill(ends, StringRule.DEAD);
        walkPlain(0, rule, state, 0, 0, 0, ends);
        return ends;
    }

    /** {@code left} while a backslash waits for the escape's letter. */
    private static final int ESCAPE = -1;
    /** {@code left} of a \\u escape's hex digits: -2 - digits still to come. */
    private static final int HEX = -2;

    /**
     * @param bits  the payload of the character under way (UTF-8 bits or hex digits)
     * @param left  UTF-8 continuation bytes still to come (0: between characters), {@link #ESCAPE} after a
     *              backslash, or {@link #HEX} - n with n hex digits of a \\u escape to come
     * @param least the least code point the UTF-8 character's length may encode
     */
    private void walkPlain(int node, StringRule rule, int state, int bits, int left, int least, int[] ends) {
        int end = node + size[node];
        for (int child = node + 1; child < end; child += size[child]) {
            int b = label[child] & 0xFF;
            int s = state;
            int v = bits;
            int l = left;
            int lo = least;
            if (l == ESCAPE) {
                int cp = StringFrame.unescaped(b);
                if (b == 'u') {
                    v = 0;
                    l = HEX - 4;
                } else if (cp < 0) {
                    continue;
                } else {
                    l = 0;
                    s = rule.step(s, cp);
                }
            } else if (l < ESCAPE) {
                int digits = HEX - l;
                int d = Character.digit(b, 16);
                if (d < 0 || (digits == 3 && v == 0xD && d > 7)) {
                    continue; // not hex, or a surrogate (StringFrame refuses those through an escape)
                }
                v = v * 16 + d;
                l = digits == 1 ? 0 : l + 1;
                if (l == 0) {
                    s = rule.step(s, v);
                }
            } else if (l == 0) {
                if (b < 0x80) {
                    if (b < 0x20 || b == '"') {
                        continue; // no plain token goes on through a quote or a control byte
                    }
                    if (b == '\\') {
                        l = ESCAPE;
                    } else {
                        s = rule.step(s, b);
                    }
                } else if (b >= 0xC2 && b <= 0xDF) {
                    v = b & 0x1F;
                    l = 1;
                    lo = 0x80;
                } else if (b >= 0xE0 && b <= 0xEF) {
                    v = b & 0x0F;
                    l = 2;
                    lo = 0x800;
                } else if (b >= 0xF0 && b <= 0xF4) {
                    v = b & 0x07;
                    l = 3;
                    lo = 0x10000;
                } else {
                    continue;
                }
            } else {
                if ((b & 0xC0) != 0x80) {
                    continue;
                }
                v = (v << 6) | (b & 0x3F);
                l--;
                if (l == 0) {
                    if (v < lo || v > SchemaRegex.MAX_CODE_POINT || (v >= 0xD800 && v <= 0xDFFF)) {
                        continue; // overlong, a surrogate or past Unicode: no plain token
                    }
                    s = rule.step(s, v);
                }
            }
            if (s == StringRule.DEAD) {
                continue;
            }
            if (l == 0 && firstToken[child] >= 0) {
                for (int t = firstToken[child]; t >= 0; t = nextToken[t]) {
                    if (plain[t]) {
                        ends[t] = s;
                    }
                }
            }
            if (size[child] > 1) {
                walkPlain(child, rule, s, v, l, lo, ends);
            }
        }
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
                // a token that completes the document fits in any budget: the reply may end there by its length
                if (next.cost() <= maxCost || next.isComplete()) {
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
    /**
     * A matcher over bytes whose states are non-negative {@code long}s (negative: no way on), so that a walk over the
     * whole vocabulary allocates nothing.
     */
    interface ByteMatcher {
        /** The state after byte {@code b} (0-255), or a negative value when the byte is refused. */
        long step(long state, int b);

        /** The fewest bytes that complete the text from {@code state}. */
        int cost(long state);
    }

    /**
     * Marks in {@code mask} every token whose bytes {@code matcher} takes from {@code state} to a state whose cost is
     * at most {@code maxCost}; sets {@code cut[0]} when one was taken but left out for its cost alone.
     *
     * @return trie nodes visited (for measurements)
     */
    int markBytes(ByteMatcher matcher, long state, int maxCost, boolean[] mask, boolean[] cut) {
        return walkBytes(0, matcher, state, maxCost, mask, cut);
    }

    /**
     * Per token id, the cost ({@link ByteMatcher#cost}) of the state {@code matcher} reaches through the token's bytes
     * from {@code state}, or -1 where it refuses one of them: a mask for any budget, read in one pass.
     */
    int[] endCosts(ByteMatcher matcher, long state) {
        int[] costs = new int[vocabularySize];
        Arrays.fill(costs, -1);
        walkEnds(0, matcher, state, (node, next) -> {
            int cost = matcher.cost(next);
            for (int t = firstToken[node]; t >= 0; t = nextToken[t]) {
                costs[t] = cost;
            }
        });
        return costs;
    }

    /**
     * Each state {@code matcher} reaches through a whole token's bytes from {@code state} (repeats possible).
     *
     * @return trie nodes visited
     */
    int endStates(ByteMatcher matcher, long state, java.util.function.LongConsumer out) {
        return walkEnds(0, matcher, state, (node, next) -> out.accept(next));
    }

    /** What a walk does at a node where tokens end: the node (its tokens) and the state they leave. */
    private interface TokenEnd {
        void at(int node, long state);
    }

    /** Visits every token {@code matcher} takes from {@code state}; returns the nodes visited. */
    private int walkEnds(int node, ByteMatcher matcher, long state, TokenEnd visit) {
        int visited = 0;
        int end = node + size[node];
        for (int child = node + 1; child < end; child += size[child]) {
            visited++;
            long next = matcher.step(state, label[child] & 0xFF);
            if (next < 0) {
                continue;
            }
            if (firstToken[child] >= 0) {
                visit.at(child, next);
            }
            if (size[child] > 1) {
                visited += walkEnds(child, matcher, next, visit);
            }
        }
        return visited;
    }

    // The mask's walks (this one and JSON's) stay written out rather than going through walkEnds' visitor: they run
    // every step of a sequence, where the others run once a state.
    private int walkBytes(int node, ByteMatcher matcher, long state, int maxCost, boolean[] mask, boolean[] cut) {
        int visited = 0;
        int end = node + size[node];
        for (int child = node + 1; child < end; child += size[child]) {
            visited++;
            long next = matcher.step(state, label[child] & 0xFF);
            if (next < 0) {
                continue;
            }
            if (firstToken[child] >= 0) {
                int cost = matcher.cost(next);
                // a token that completes the text fits in any budget: the reply may end there by its length
                if (cost <= maxCost || cost == 0) {
                    for (int t = firstToken[child]; t >= 0; t = nextToken[t]) {
                        mask[t] = true;
                    }
                } else {
                    cut[0] = true;
                }
            }
            if (size[child] > 1) {
                visited += walkBytes(child, matcher, next, maxCost, mask, cut);
            }
        }
        return visited;
    }
}
