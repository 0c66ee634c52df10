package io.moe4j.text.tokenizer;

/** What a Split pre-tokenizer does with the text its pattern matches (the {@code behavior} key). */
enum SplitBehavior {
    /** Matches dropped. */
    REMOVED,
    /** Each match a piece of its own. */
    ISOLATED,
    /** Each match joined to the piece before it. */
    MERGED_WITH_PREVIOUS,
    /** Each match joined to the piece after it. */
    MERGED_WITH_NEXT,
    /** Runs of matches joined into one piece, runs of non-matches into another. */
    CONTIGUOUS;

    /** The value as tokenizer.json spells it ("Isolated", "MergedWithPrevious", ...), or null if unknown. */
    static SplitBehavior parse(String name) {
        return switch (name) {
            case "Removed" -> REMOVED;
            case "Isolated" -> ISOLATED;
            case "MergedWithPrevious" -> MERGED_WITH_PREVIOUS;
            case "MergedWithNext" -> MERGED_WITH_NEXT;
            case "Contiguous" -> CONTIGUOUS;
            default -> null;
        };
    }
}
