package io.moe4j.generate;

import io.moe4j.config.ModelFamily;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Which families' free replies have their tool calls read (the server refuses tool_choice auto for the others). */
class ChatOutputsToolCallsTest {
    private static ChatOutputs outputs(ModelFamily family) {
        return new ChatOutputs(null, family, 16, List.of());
    }

    @Test
    void qwenDeepSeekAndHarmonyRepliesHaveTheirCallsRead() {
        assertThat(outputs(ModelFamily.QWEN3_MOE).readsFreeToolCalls("<|im_start|>assistant\n")).isTrue();
        assertThat(outputs(ModelFamily.DEEPSEEK_V3).readsFreeToolCalls("<｜Assistant｜>")).isTrue();
        assertThat(outputs(ModelFamily.GPT_OSS).readsFreeToolCalls("<|start|>user<|message|>hi<|end|>"
                + "<|start|>assistant")).isTrue();
    }

    @Test
    void mixtralAndLlama4RepliesHaveNoParser() {
        assertThat(outputs(ModelFamily.MIXTRAL).readsFreeToolCalls("[INST] hi [/INST]")).isFalse();
        assertThat(outputs(ModelFamily.LLAMA4_TEXT).readsFreeToolCalls(
                "<|header_start|>assistant<|header_end|>\n\n")).isFalse();
    }
}
