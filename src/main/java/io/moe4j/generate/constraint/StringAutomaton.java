package io.moe4j.generate.constraint;

import io.moe4j.MoeException;
import io.moe4j.generate.constraint.SchemaRegex.Alt;
import io.moe4j.generate.constraint.SchemaRegex.Chars;
import io.moe4j.generate.constraint.SchemaRegex.Concat;
import io.moe4j.generate.constraint.SchemaRegex.Node;
import io.moe4j.generate.constraint.SchemaRegex.Repeat;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * A deterministic automaton over code points for the strings that fit every one of some regular expressions and a
 * length range (in code points, as JSON Schema counts {@code minLength} and {@code maxLength}): each expression is
 * a Thompson automaton, and the product of their state sets and the length so far is made deterministic. States
 * that cannot reach an accepting one are dropped, so that a string under way can always be finished.
 */
final class StringAutomaton implements StringRule {
    /** The most states an expression's nondeterministic automaton may have (its counted repeats unrolled). */
    static final int MAX_NFA_STATES = 20_000;
    /** The most states the deterministic product may have. */
    static final int MAX_STATES = 10_000;
    /**
     * The most work (automaton states visited while making products deterministic) all the strings of one schema may
     * take: a request's schema is compiled on the server's request thread, so its cost is bounded (a few tenths of a
     * second on a 2-core Zen 3), not just each automaton's size.
     */
    static final long MAX_WORK = 10_000_000L;

    /**
     * How an automaton's strings are written out, which its byte counts follow: the token budget is reckoned in those
     * bytes, and a byte-level vocabulary spells any of them in at most one token a byte.
     */
    enum Spelling {
        /** Inside a JSON string: quotes, backslashes and control characters escaped ({@link StringRule#bytesOf}). */
        JSON_STRING,
        /** As raw UTF-8: a whole reply held to a regular expression. */
        RAW_TEXT;

        /** The fewest bytes that spell any code point of [lo, hi]. */
        int fewestBytes(int lo, int hi) {
            return this == JSON_STRING ? StringRule.fewestBytes(lo, hi) : StringRule.utf8Length(lo);
        }

        /** Where a message says the problem is: the schema path, or the request field holding the expression. */
        String subject(String where) {
            return this == JSON_STRING ? "JSON schema at " + where : where;
        }
    }

    /**
     * What is left of one schema's (or one reply expression's) {@link #MAX_WORK}, spent by each automaton it compiles,
     * and how those automata's strings are spelled.
     */
    static final class WorkBudget {
        private long left = MAX_WORK;
        private final Spelling spelling;

        WorkBudget() {
            this(Spelling.JSON_STRING);
        }

        WorkBudget(Spelling spelling) {
            this.spelling = spelling;
        }

        void spend(long work, String where, int states) {
            left -= work;
            if (left < 0) {
                throw new MoeException(spelling.subject(where) + ": its strings take too much work to compile "
                        + "(over " + MAX_WORK + " automaton steps for the schema, " + states + " states here); "
                        + "simplify the patterns, their counted repeats or the length bounds");
            }
        }
    }

    /** Per state: its transitions as (lo, hi, target) triples, sorted by lo. */
    private final int[][] transitions;
    private final boolean[] accepting;
    private final int[] dist;
    /** Per state: the characters along the path {@link #dist} measures (its fewest bytes). */
    private final int[] charsAlongDist;
    /** Per state: the fewest characters to an accepting state, and the bytes along that path. */
    private final int[] minChars;
    private final int[] bytesAlongMinChars;

    private final Spelling spelling;

    private StringAutomaton(int[][] transitions, boolean[] accepting, int[] dist, Spelling spelling) {
        this.spelling = spelling;
        this.transitions = transitions;
        this.accepting = accepting;
        this.dist = dist;
        int n = transitions.length;
        this.charsAlongDist = new int[n];
        this.minChars = new int[n];
        this.bytesAlongMinChars = new int[n];
        pathMeasures();
    }

    /**
     * The paths {@link MaxLengthRule} reckons with: along each state's fewest-bytes path its characters, and each
     * state's fewest characters with the bytes along them. Both by relaxing over the live transitions until nothing
     * changes (Bellman-Ford: the graphs are small).
     */
    private void pathMeasures() {
        int n = transitions.length;
        Arrays.fill(charsAlongDist, NO_WAY);
        Arrays.fill(minChars, NO_WAY);
        Arrays.fill(bytesAlongMinChars, NO_WAY);
        for (int s = 0; s < n; s++) {
            if (accepting[s]) {
                charsAlongDist[s] = 0;
                minChars[s] = 0;
                bytesAlongMinChars[s] = 0;
            }
        }
        boolean changed = true;
        while (changed) {
            changed = false;
            // states are numbered in the order they were found from the start, so their successors mostly come
            // later: sweeping from the last settles a chain in one pass
            for (int s = n - 1; s >= 0; s--) {
                int[] t = transitions[s];
                for (int i = 0; i < t.length; i += 3) {
                    int to = t[i + 2];
                    int w = spelling.fewestBytes(t[i], t[i + 1]);
                    // the fewest-bytes path: a successor on it, the one with the fewest characters among ties
                    if (dist[to] != NO_WAY && dist[to] + w == dist[s] && charsAlongDist[to] != NO_WAY
                            && charsAlongDist[to] + 1 < charsAlongDist[s]) {
                        charsAlongDist[s] = charsAlongDist[to] + 1;
                        changed = true;
                    }
                    if (minChars[to] != NO_WAY && (minChars[to] + 1 < minChars[s] || (minChars[to] + 1 == minChars[s]
                            && bytesAlongMinChars[to] + w < bytesAlongMinChars[s]))) {
                        minChars[s] = minChars[to] + 1;
                        bytesAlongMinChars[s] = bytesAlongMinChars[to] + w;
                        changed = true;
                    }
                }
            }
        }
    }

    /** The fewest characters from this state to an accepting one. */
    int minChars(int state) {
        return minChars[state];
    }

    /**
     * Bytes of a shortest string from this state to acceptance in at most {@code charsLeft} characters (at least
     * {@link #minChars}): the fewest-bytes path where it is short enough, else the fewest-characters path.
     */
    int distWithin(int state, int charsLeft) {
        return charsAlongDist[state] <= charsLeft ? dist[state] : bytesAlongMinChars[state];
    }

    /**
     * Per state, a class id: states of one class are at the same {@link #dist} and accept alike, and each code point
     * takes them to states of one class at {@code depth - 1} (or is refused by both). So every text of at most
     * {@code depth} code points is refused by both or takes both to states at the same distance: a mask of tokens no
     * longer than that is the same from either. A counted repeat's states ({@code [^\n]{0,300}}) fall into few such
     * classes. Moore's partition refinement, stopped after {@code depth} rounds or when a round splits nothing.
     */
    int[] futureClasses(int depth) {
        int n = transitions.length;
        int[] classes = new int[n];
        Map<IntKey, Integer> ids = new HashMap<>();
        for (int s = 0; s < n; s++) {
            classes[s] = ids.computeIfAbsent(new IntKey(new int[] {accepting[s] ? 1 : 0, dist[s]}), k -> ids.size());
        }
        for (int round = 0; round < depth; round++) {
            Map<IntKey, Integer> next = new HashMap<>();
            int[] refined = new int[n];
            for (int s = 0; s < n; s++) {
                int[] t = transitions[s];
                int[] key = new int[1 + t.length];
                key[0] = classes[s];
                for (int i = 0; i < t.length; i += 3) {
                    key[1 + i] = t[i];
                    key[2 + i] = t[i + 1];
                    key[3 + i] = classes[t[i + 2]];
                }
                refined[s] = next.computeIfAbsent(new IntKey(key), k -> next.size());
            }
            if (next.size() == ids.size()) {
                break; // a refinement only splits: as many classes as before is the same partition
            }
            classes = refined;
            ids.clear();
            ids.putAll(next);
        }
        return classes;
    }

    private record IntKey(int[] values) {
        @Override
        public boolean equals(Object o) {
            return o instanceof IntKey k && Arrays.equals(values, k.values);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(values);
        }
    }

    /** The most code points any one state takes (its transitions' ranges together). */
    long widestState() {
        long widest = 0;
        for (int[] t : transitions) {
            long width = 0;
            for (int i = 0; i < t.length; i += 3) {
                width += t[i + 1] - t[i] + 1;
            }
            widest = Math.max(widest, width);
        }
        return widest;
    }

    /**
     * The most code points a string from the start can take (every state is live, so each path can be finished), or
     * -1 when a cycle makes it unbounded.
     */
    int longestPath() {
        int n = transitions.length;
        int[] longest = new int[n];
        byte[] mark = new byte[n]; // 0 new, 1 on the path, 2 done
        // iterative depth-first search: a state is done when all its successors are
        int[] stack = new int[n];
        int[] next = new int[n];
        int top = 0;
        stack[top++] = 0;
        mark[0] = 1;
        while (top > 0) {
            int s = stack[top - 1];
            int[] t = transitions[s];
            if (next[s] < t.length) {
                int to = t[next[s] + 2];
                next[s] += 3;
                if (mark[to] == 1) {
                    return -1;
                }
                if (mark[to] == 0) {
                    mark[to] = 1;
                    stack[top++] = to;
                }
            } else {
                for (int i = 0; i < t.length; i += 3) {
                    longest[s] = Math.max(longest[s], 1 + longest[t[i + 2]]);
                }
                mark[s] = 2;
                top--;
            }
        }
        return longest[0];
    }

    /** This state's transitions as (lo, hi, target) triples. Do not modify. */
    int[] transitions(int state) {
        return transitions[state];
    }

    /**
     * @param expressions whole-string expressions ({@link SchemaRegex#parse}) that must all fit
     * @param maxLength   -1 without a bound
     * @param where       the schema path and keywords, for messages
     * @throws MoeException when the automaton grows past its bounds or no string fits
     */
    static StringAutomaton of(List<Node> expressions, int minLength, int maxLength, String where,
                              WorkBudget budget) {
        return of(expressions, List.of(), minLength, maxLength, where, budget);
    }

    /** {@link #of}, the strings also held to {@code machines}, automata given state by state. */
    static StringAutomaton of(List<Node> expressions, List<Machine> machines, int minLength, int maxLength,
                              String where, WorkBudget budget) {
        List<Nfa> nfas = new ArrayList<>();
        for (Node e : expressions) {
            nfas.add(Nfa.of(e, budget.spelling.subject(where)));
        }
        for (Machine m : machines) {
            nfas.add(Nfa.of(m, budget.spelling.subject(where)));
        }
        return determinize(nfas, minLength, maxLength, where, budget);
    }

    /**
     * A deterministic automaton written out, for rules that are regular but have no short expression (a number's
     * divisibility): state 0 starts; per state its transitions as (lo, hi, target) triples; which states accept.
     */
    record Machine(int[][] transitions, boolean[] accepting) {
        Machine {
            if (transitions.length != accepting.length) {
                throw new IllegalArgumentException(transitions.length + " states, " + accepting.length + " flags");
            }
        }
    }

    /** {@link #of} with a budget of its own. */
    static StringAutomaton of(List<Node> expressions, int minLength, int maxLength, String where) {
        return of(expressions, minLength, maxLength, where, new WorkBudget());
    }

    @Override
    public int start() {
        return 0;
    }

    @Override
    public int step(int state, int cp) {
        int[] t = transitions[state];
        int lo = 0;
        int hi = t.length / 3 - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (cp < t[3 * mid]) {
                hi = mid - 1;
            } else if (cp > t[3 * mid + 1]) {
                lo = mid + 1;
            } else {
                return t[3 * mid + 2];
            }
        }
        return DEAD;
    }

    @Override
    public boolean accepts(int state) {
        return accepting[state];
    }

    @Override
    public int dist(int state) {
        return dist[state];
    }

    @Override
    public int distAfter(int state, int lo, int hi) {
        int best = NO_WAY;
        int[] t = transitions[state];
        for (int i = 0; i < t.length; i += 3) {
            if (t[i] <= hi && t[i + 1] >= lo) {
                best = Math.min(best, dist[t[i + 2]]);
            }
        }
        return best;
    }

    int stateCount() {
        return transitions.length;
    }

    private record Key(List<BitSet> sets, int length) {
    }

    private static StringAutomaton determinize(List<Nfa> nfas, int minLength, int maxLength, String where,
                                               WorkBudget budget) {
        int lengthCap = maxLength >= 0 ? maxLength : minLength;
        Map<Key, Integer> ids = new HashMap<>();
        List<Key> keys = new ArrayList<>();
        List<int[]> transitions = new ArrayList<>();
        List<BitSet> starts = new ArrayList<>();
        for (Nfa n : nfas) {
            BitSet s = new BitSet();
            s.set(0);
            starts.add(n.closure(s));
        }
        Key first = new Key(starts, 0);
        ids.put(first, 0);
        keys.add(first);
        for (int id = 0; id < keys.size(); id++) {
            Key key = keys.get(id);
            if (maxLength >= 0 && key.length() >= maxLength) {
                transitions.add(new int[0]);
                continue;
            }
            int[] cuts = boundaries(nfas, key);
            // the cuts read every set once, and each range between them moves every set once more
            budget.spend((long) (cuts.length + 1) * key.sets().stream().mapToInt(BitSet::cardinality).sum(), where,
                    keys.size());
            int[] out = new int[3 * cuts.length];
            int k = 0;
            for (int c = 0; c + 1 < cuts.length; c++) {
                int lo = cuts[c];
                int hi = cuts[c + 1] - 1;
                List<BitSet> next = new ArrayList<>(nfas.size());
                for (int e = 0; e < nfas.size(); e++) {
                    BitSet moved = nfas.get(e).move(key.sets().get(e), lo);
                    if (moved.isEmpty()) {
                        break; // this expression takes no code point of the range
                    }
                    next.add(nfas.get(e).closure(moved));
                }
                if (next.size() < nfas.size()) {
                    continue;
                }
                Key target = new Key(next, Math.min(key.length() + 1, lengthCap));
                Integer to = ids.get(target);
                if (to == null) {
                    if (keys.size() >= MAX_STATES) {
                        throw new MoeException(budget.spelling.subject(where) + ": the strings it allows need "
                                + "more than " + MAX_STATES + " automaton states; simplify the pattern or the length "
                                + "bounds");
                    }
                    to = keys.size();
                    ids.put(target, to);
                    keys.add(target);
                }
                if (k > 0 && out[k - 1] == to && out[k - 2] == lo - 1) {
                    out[k - 2] = hi; // joins the previous range
                } else {
                    out[k++] = lo;
                    out[k++] = hi;
                    out[k++] = to;
                }
            }
            transitions.add(Arrays.copyOf(out, k));
        }
        int n = keys.size();
        boolean[] accepting = new boolean[n];
        for (int s = 0; s < n; s++) {
            Key key = keys.get(s);
            boolean all = key.length() >= minLength;
            for (int e = 0; e < nfas.size() && all; e++) {
                all = key.sets().get(e).get(nfas.get(e).accept);
            }
            accepting[s] = all;
        }
        int[][] t = transitions.toArray(new int[0][]);
        int[] dist = distances(t, accepting, budget.spelling);
        if (dist[0] == NO_WAY) {
            throw new MoeException(budget.spelling == Spelling.RAW_TEXT ? where + " matches no text at all"
                    : budget.spelling.subject(where) + " allows no value: its pattern, format, length or number "
                    + "bounds exclude each other");
        }
        for (int s = 0; s < n; s++) {
            t[s] = live(t[s], dist);
        }
        return new StringAutomaton(t, accepting, dist, budget.spelling);
    }

    /** Where the sets' transitions start or end: the code points in [cuts[i], cuts[i+1]) all go to one place. */
    private static int[] boundaries(List<Nfa> nfas, Key key) {
        int[] collected = new int[16];
        int k = 0;
        for (int e = 0; e < nfas.size(); e++) {
            Nfa nfa = nfas.get(e);
            BitSet set = key.sets().get(e);
            for (int s = set.nextSetBit(0); s >= 0; s = set.nextSetBit(s + 1)) {
                int[] edges = nfa.edges(s);
                for (int i = 0; i < edges.length; i += 3) {
                    if (k + 2 > collected.length) {
                        collected = Arrays.copyOf(collected, collected.length * 2);
                    }
                    collected[k++] = edges[i];
                    collected[k++] = edges[i + 1] + 1;
                }
            }
        }
        int[] sorted = Arrays.copyOf(collected, k);
        Arrays.sort(sorted);
        int m = 0;
        for (int i = 0; i < sorted.length; i++) {
            if (m == 0 || sorted[m - 1] != sorted[i]) {
                sorted[m++] = sorted[i];
            }
        }
        return Arrays.copyOf(sorted, m);
    }

    /** Bytes from each state to an accepting one at the fewest (Dijkstra over the reversed transitions). */
    private static int[] distances(int[][] t, boolean[] accepting, Spelling spelling) {
        int n = t.length;
        List<List<int[]>> into = new ArrayList<>(n);
        for (int s = 0; s < n; s++) {
            into.add(new ArrayList<>());
        }
        for (int s = 0; s < n; s++) {
            for (int i = 0; i < t[s].length; i += 3) {
                into.get(t[s][i + 2]).add(new int[] {s, spelling.fewestBytes(t[s][i], t[s][i + 1])});
            }
        }
        int[] dist = new int[n];
        Arrays.fill(dist, NO_WAY);
        PriorityQueue<int[]> queue = new PriorityQueue<>((a, b) -> Integer.compare(a[1], b[1]));
        for (int s = 0; s < n; s++) {
            if (accepting[s]) {
                dist[s] = 0;
                queue.add(new int[] {s, 0});
            }
        }
        while (!queue.isEmpty()) {
            int[] top = queue.poll();
            if (top[1] > dist[top[0]]) {
                continue;
            }
            for (int[] edge : into.get(top[0])) {
                int d = top[1] + edge[1];
                if (d < dist[edge[0]]) {
                    dist[edge[0]] = d;
                    queue.add(new int[] {edge[0], d});
                }
            }
        }
        return dist;
    }

    /** The transitions whose target can still reach an accepting state. */
    private static int[] live(int[] t, int[] dist) {
        int[] out = new int[t.length];
        int k = 0;
        for (int i = 0; i < t.length; i += 3) {
            if (dist[t[i + 2]] != NO_WAY) {
                out[k++] = t[i];
                out[k++] = t[i + 1];
                out[k++] = t[i + 2];
            }
        }
        return k == t.length ? t : Arrays.copyOf(out, k);
    }

    /** A Thompson automaton: state 0 starts, {@link #accept} accepts; edges on code point ranges and empty moves. */
    private static final class Nfa {
        private final List<int[]> edges = new ArrayList<>();
        private final List<int[]> empty = new ArrayList<>();
        private final String where;
        private int accept;

        /** @param where what messages name: the schema path or the request field, already worded */
        private Nfa(String where) {
            this.where = where;
        }

        static Nfa of(Node expression, String where) {
            Nfa nfa = new Nfa(where);
            int start = nfa.state();
            nfa.accept = nfa.build(expression, start);
            return nfa;
        }

        /** The machine's states as they are, each accepting one linked to one accepting state of its own. */
        static Nfa of(Machine machine, String where) {
            Nfa nfa = new Nfa(where);
            int n = machine.transitions().length;
            for (int s = 0; s < n; s++) {
                nfa.state();
            }
            nfa.accept = nfa.state();
            for (int s = 0; s < n; s++) {
                int[] t = machine.transitions()[s];
                for (int i = 0; i < t.length; i += 3) {
                    nfa.edge(s, t[i], t[i + 1], t[i + 2]);
                }
                if (machine.accepting()[s]) {
                    nfa.link(s, nfa.accept);
                }
            }
            return nfa;
        }

        int[] edges(int state) {
            return edges.get(state);
        }

        private int state() {
            if (edges.size() >= MAX_NFA_STATES) {
                throw new MoeException(where + ": the pattern needs more than " + MAX_NFA_STATES
                        + " automaton states (counted repeats are unrolled); simplify it");
            }
            edges.add(new int[0]);
            empty.add(new int[0]);
            return edges.size() - 1;
        }

        private void edge(int from, int lo, int hi, int to) {
            int[] e = edges.get(from);
            int[] grown = Arrays.copyOf(e, e.length + 3);
            grown[e.length] = lo;
            grown[e.length + 1] = hi;
            grown[e.length + 2] = to;
            edges.set(from, grown);
        }

        private void link(int from, int to) {
            int[] e = empty.get(from);
            int[] grown = Arrays.copyOf(e, e.length + 1);
            grown[e.length] = to;
            empty.set(from, grown);
        }

        /** Builds the expression from state {@code from}; returns the state where it ends. */
        private int build(Node node, int from) {
            switch (node) {
                case Chars chars -> {
                    int to = state();
                    int[] r = chars.ranges();
                    for (int i = 0; i < r.length; i += 2) {
                        edge(from, r[i], r[i + 1], to);
                    }
                    return to;
                }
                case Concat concat -> {
                    int at = from;
                    for (Node part : concat.parts()) {
                        at = build(part, at);
                    }
                    return at;
                }
                case Alt alt -> {
                    int end = state();
                    for (Node alternative : alt.alternatives()) {
                        int start = state();
                        link(from, start);
                        link(build(alternative, start), end);
                    }
                    return end;
                }
                case Repeat repeat -> {
                    int at = from;
                    for (int i = 0; i < repeat.min(); i++) {
                        int start = state();
                        link(at, start);
                        at = build(repeat.node(), start);
                    }
                    if (repeat.max() < 0) {
                        // a loop on a state of its own, so that it cannot lead back into what came before
                        int loop = state();
                        link(at, loop);
                        link(build(repeat.node(), loop), loop);
                        return loop;
                    }
                    for (int i = repeat.min(); i < repeat.max(); i++) {
                        int start = state();
                        link(at, start);
                        int joined = state();
                        link(build(repeat.node(), start), joined);
                        link(at, joined);
                        at = joined;
                    }
                    return at;
                }
            }
        }

        /** The states reached from {@code set} by empty moves, the set included. */
        BitSet closure(BitSet set) {
            BitSet out = (BitSet) set.clone();
            ArrayDeque<Integer> work = new ArrayDeque<>();
            set.stream().forEach(work::add);
            while (!work.isEmpty()) {
                for (int to : empty.get(work.pop())) {
                    if (!out.get(to)) {
                        out.set(to);
                        work.add(to);
                    }
                }
            }
            return out;
        }

        /** The states that code point {@code cp} leads to from {@code set} (before empty moves). */
        BitSet move(BitSet set, int cp) {
            BitSet out = new BitSet();
            for (int s = set.nextSetBit(0); s >= 0; s = set.nextSetBit(s + 1)) {
                int[] e = edges.get(s);
                for (int i = 0; i < e.length; i += 3) {
                    if (e[i] <= cp && cp <= e[i + 1]) {
                        out.set(e[i + 2]);
                    }
                }
            }
            return out;
        }
    }
}
