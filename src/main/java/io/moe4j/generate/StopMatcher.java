package io.moe4j.generate;

import java.util.List;

/**
 * Finds user stop strings in text that arrives in pieces. Text that could still be the start of a stop string is
 * held back until it is known not to be one, so a stop string is never shown, even when it spans several tokens.
 */
public final class StopMatcher {
    private final List<String> stops;
    private final StringBuilder pending = new StringBuilder();
    private boolean stopped;
    private String matched;

    public StopMatcher(List<String> stops) {
        this.stops = stops.stream().filter(s -> !s.isEmpty()).toList();
    }

    /** Adds a piece of generated text; returns the text that is now safe to show (possibly empty). */
    public String accept(String piece) {
        if (stopped) {
            return "";
        }
        pending.append(piece);
        int first = -1;
        for (String s : stops) {
            int at = pending.indexOf(s);
            if (at >= 0 && (first < 0 || at < first)) {
                first = at;
                matched = s;
            }
        }
        if (first >= 0) {
            stopped = true;
            String out = pending.substring(0, first);
            pending.setLength(0);
            return out;
        }
        int hold = 0;
        for (String s : stops) {
            hold = Math.max(hold, overlap(pending, s));
        }
        String out = pending.substring(0, pending.length() - hold);
        pending.delete(0, pending.length() - hold);
        return out;
    }

    /** The held-back text once generation ends without a stop string. */
    public String flush() {
        String out = stopped ? "" : pending.toString();
        pending.setLength(0);
        return out;
    }

    public boolean stopped() {
        return stopped;
    }

    /** The stop string that ended the text, or null. */
    public String matched() {
        return matched;
    }

    /** Length of the longest suffix of text that is a proper prefix of stop. */
    private static int overlap(CharSequence text, String stop) {
        int max = Math.min(text.length(), stop.length() - 1);
        for (int k = max; k > 0; k--) {
            boolean same = true;
            for (int i = 0; i < k; i++) {
                if (text.charAt(text.length() - k + i) != stop.charAt(i)) {
                    same = false;
                    break;
                }
            }
            if (same) {
                return k;
            }
        }
        return 0;
    }
}
