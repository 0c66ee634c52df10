package io.moe4j.text.chat.output;

import java.util.ArrayList;
import java.util.List;

/**
 * Separates a streamed reply into answer, reasoning and other text whatever the model's format, so generation can
 * show the answer by default and the reasoning apart. {@link #forPrompt} picks the format from the rendered
 * prompt the reply continues:
 * <ul>
 *   <li>ends with {@code <|start|>assistant} (gpt-oss): harmony; {@code final} is the answer, {@code analysis}
 *       the reasoning, other channels (tool calls, {@code commentary} preambles) are {@link Kind#OTHER}, and text
 *       outside any message is answer;</li>
 *   <li>ends with {@code <think>} and newlines (templates that open the reasoning in the prompt): reasoning up to
 *       {@code </think>}, then answer;</li>
 *   <li>otherwise: a reply that opens with {@code <think>} has its reasoning split off (Qwen3); any other reply is
 *       all answer.</li>
 * </ul>
 */
public final class ReplySplitter {
    public enum Kind { ANSWER, REASONING, OTHER }

    /** A piece of the reply; {@code channel} is the harmony channel, or null for other formats. */
    public record Piece(Kind kind, String channel, String text) { }

    private final HarmonyParser harmony;
    private final ThinkSplitter think;

    private ReplySplitter(HarmonyParser harmony, ThinkSplitter think) {
        this.harmony = harmony;
        this.think = think;
    }

    public static ReplySplitter forPrompt(String renderedPrompt) {
        if (renderedPrompt.endsWith(HarmonyParser.START + "assistant")) {
            return new ReplySplitter(HarmonyParser.forAssistantReply(), null);
        }
        String trimmed = renderedPrompt;
        while (trimmed.endsWith("\n")) {
            trimmed = trimmed.substring(0, trimmed.length() - 1);
        }
        if (trimmed.endsWith(ThinkSplitter.OPEN)) {
            return new ReplySplitter(null, ThinkSplitter.startingInside());
        }
        return new ReplySplitter(null, ThinkSplitter.startingOutside());
    }

    /** Whether the reply is read as harmony messages (then {@link #harmonyMessages()} has them). */
    public boolean isHarmony() {
        return harmony != null;
    }

    public List<Piece> feed(String text) {
        return feed(text, null);
    }

    /**
     * {@link #feed(String)} with the offsets in {@code text} where the model's special tokens' texts end (null: none),
     * which harmony reads after {@link #markersFromTokens()}; the think format reads its tags from the text alone.
     */
    public List<Piece> feed(String text, int[] specialEnds) {
        return harmony != null ? fromHarmony(harmony.feed(text, specialEnds)) : fromThink(think.feed(text));
    }

    /** Harmony markers count only where a special token made them ({@link HarmonyParser#markersFromTokens()}). */
    public ReplySplitter markersFromTokens() {
        if (harmony != null) {
            harmony.markersFromTokens();
        }
        return this;
    }

    public List<Piece> finish() {
        return harmony != null ? fromHarmony(harmony.finish()) : fromThink(think.finish());
    }

    /** The harmony messages completed so far (tool calls among them); empty for other formats. */
    public List<HarmonyMessage> harmonyMessages() {
        return harmony == null ? List.of() : harmony.messages();
    }

    private static List<Piece> fromHarmony(List<HarmonyEvent> events) {
        List<Piece> out = new ArrayList<>();
        for (HarmonyEvent e : events) {
            if (e instanceof HarmonyEvent.ContentDelta d) {
                Kind kind = d.channel() == null || d.channel().equals("final") ? Kind.ANSWER
                        : d.channel().equals("analysis") ? Kind.REASONING : Kind.OTHER;
                out.add(new Piece(kind, d.channel(), d.text()));
            }
        }
        return out;
    }

    private static List<Piece> fromThink(List<ThinkSplitter.Piece> pieces) {
        List<Piece> out = new ArrayList<>(pieces.size());
        for (ThinkSplitter.Piece p : pieces) {
            out.add(new Piece(p.reasoning() ? Kind.REASONING : Kind.ANSWER, null, p.text()));
        }
        return out;
    }
}
