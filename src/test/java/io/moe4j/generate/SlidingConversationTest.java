package io.moe4j.generate;

import io.moe4j.model.ModelOptions;
import io.moe4j.model.Session;
import io.moe4j.testing.RandomModels;
import io.moe4j.text.chat.ChatRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A gpt-oss conversation (a sliding-window layer of 128 positions, and a harmony prompt longer than that) keeps its
 * cache from turn to turn, though the template renders the last reply anew: the turn rewinds to where that reply
 * began, past the window's start, and answers as a fresh session given the whole conversation does.
 */
class SlidingConversationTest {

    @Test
    void aGptOssTurnReusesTheCacheAcrossTheSlidingWindow(@TempDir Path tmp) {
        try (MoeModel model = MoeModel.load(RandomModels.gptOss(tmp.resolve("gpt-oss"), 5),
                ModelOptions.defaults().withThreads(2)); Conversation chat = model.newConversation()) {
            GenerationRequest greedy = new GenerationRequest(6, SamplingParams.greedy(), List.of(), model.eosIds());
            chat.say("Tell me about the sea. ".repeat(40), greedy, p -> { }, () -> false);
            GenerationResult second = chat.say("And then?", greedy, p -> { }, () -> false);
            assertThat(chat.reusedLastTurn()).as("tokens the second turn took from the cache").isGreaterThan(128 + 100);

            var messages = chat.messages();
            messages.remove(messages.size() - 1);
            int[] prompt = model.encodeChat(new ChatRequest(messages, true, null, java.util.Map.of(), null));
            try (Session fresh = model.model().newSession()) {
                GenerationResult alone = new Generator(model.tokenizer()).generate(fresh, prompt, greedy, p -> { },
                        () -> false);
                assertThat(second.tokens()).isEqualTo(alone.tokens());
            }
        }
    }
}
