package io.moe4j.generate.constraint;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The fewest tokens from each state a sequence reaches by whole tokens to a match, for an automaton without cycles:
 * 0 where the text so far matches, else 1 + the least over the tokens that go on. Every token takes at least one
 * byte and the automaton has no cycle, so the states form a directed acyclic graph and one depth-first pass settles
 * them (post-order, on an explicit stack: texts may be thousands of bytes long).
 */
final class TokenCosts {
    private TokenCosts() {
    }

    /**
     * The costs of every state reached from the start, or null when the walks visit more than {@code maxNodes} trie
     * nodes in all (wide classes, whose every state lets most of the vocabulary through) or no match can be spelled.
     */
    static Map<Long, Integer> of(Utf8Matcher matcher, TokenTrie trie, long maxNodes) {
        long[] visited = new long[1];
        Map<Long, Integer> cost = new HashMap<>();
        Map<Long, long[]> successors = new HashMap<>();
        List<Long> stack = new ArrayList<>();
        stack.add(matcher.start());
        while (!stack.isEmpty()) {
            long s = stack.getLast();
            if (cost.containsKey(s)) {
                stack.removeLast();
                continue;
            }
            long[] next = successors.get(s);
            if (next == null) {
                next = ends(matcher, trie, s, visited);
                successors.put(s, next);
                if (visited[0] > maxNodes) {
                    return null;
                }
                boolean pushed = false;
                for (long t : next) {
                    if (!cost.containsKey(t)) {
                        stack.add(t);
                        pushed = true;
                    }
                }
                if (pushed) {
                    continue;
                }
            }
            int best = matcher.isComplete(s) ? 0 : StringRule.NO_WAY;
            for (long t : next) {
                Integer c = cost.get(t);
                if (c != null && c != StringRule.NO_WAY) {
                    best = Math.min(best, c + 1);
                }
            }
            cost.put(s, best);
            successors.remove(s);
            stack.removeLast();
        }
        // a vocabulary that cannot spell any match at all (no token for some byte): leave the costs in bytes
        return cost.get(matcher.start()) == StringRule.NO_WAY ? null : Map.copyOf(cost);
    }

    /** The distinct states the tokens from {@code s} end in. */
    private static long[] ends(Utf8Matcher matcher, TokenTrie trie, long s, long[] visited) {
        java.util.Set<Long> seen = new java.util.HashSet<>();
        visited[0] += trie.endStates(matcher, s, seen::add);
        return seen.stream().mapToLong(Long::longValue).toArray();
    }
}
