package io.moe4j.text.chat.output;

/** What {@link HarmonyParser} reports as text streams in; {@code index} counts messages from 0. */
public sealed interface HarmonyEvent {
    /** A header was read: content of this message follows. */
    record MessageStart(int index, String role, String channel, String recipient, String contentType)
            implements HarmonyEvent { }

    /** Content text of message {@code index}, in order; the deltas of a message concatenate to its content. */
    record ContentDelta(int index, String channel, String text) implements HarmonyEvent { }

    /** The message is complete (or cut off, when {@code message.end()} is null). */
    record MessageEnd(int index, HarmonyMessage message) implements HarmonyEvent { }
}
