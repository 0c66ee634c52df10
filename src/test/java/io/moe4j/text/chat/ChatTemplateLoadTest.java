package io.moe4j.text.chat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import io.moe4j.MoeException;
import io.moe4j.text.chat.jinja.JinjaSyntaxException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Where a model directory's template and special tokens come from, and the errors when they are wrong. */
class ChatTemplateLoadTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    private static ChatRequest oneUserMessage() throws IOException {
        return ChatRequest.of((ArrayNode) JSON.readTree("[{\"role\": \"user\", \"content\": \"hi\"}]"), true);
    }

    @Test
    void chatTemplateJinjaTakesPrecedenceOverTheConfigKey() throws IOException {
        Files.writeString(dir.resolve("tokenizer_config.json"),
                "{\"chat_template\": \"from config\", \"bos_token\": \"<s>\"}");
        Files.writeString(dir.resolve("chat_template.jinja"), "{{ bos_token }}from file {{ messages[0].content }}\n");
        assertThat(ChatTemplate.load(dir).render(oneUserMessage())).isEqualTo("<s>from file hi");
    }

    @Test
    void specialTokensAreStringsOrContentObjects() throws IOException {
        Files.writeString(dir.resolve("tokenizer_config.json"), """
                {"chat_template": "{{ bos_token }}|{{ eos_token }}|{{ pad_token }}|{{ unk_token is defined }}|{{ additional_special_tokens }}",
                 "bos_token": {"__type": "AddedToken", "content": "<B>", "lstrip": false},
                 "eos_token": "<E>", "pad_token": null, "unk_token": null,
                 "additional_special_tokens": ["<x>", {"content": "<y>"}]}
                """);
        assertThat(ChatTemplate.load(dir).render(oneUserMessage())).isEqualTo("<B>|<E>||False|['<x>', '<y>']");
    }

    @Test
    void aListOfNamedTemplatesTakesDefaultOrToolUseWithTools() throws IOException {
        Files.writeString(dir.resolve("tokenizer_config.json"), """
                {"chat_template": [{"name": "default", "template": "plain"}, {"name": "tool_use", "template": "tools: {{ tools | length }}"}]}
                """);
        ChatTemplate t = ChatTemplate.load(dir);
        assertThat(t.render(oneUserMessage())).isEqualTo("plain");
        assertThat(t.render(oneUserMessage().withTools((ArrayNode) JSON.readTree("[{\"type\": \"function\"}]"))))
                .isEqualTo("tools: 1");
    }

    @Test
    void templateArgumentsAndTheToolsAndDocumentsDefaults() throws IOException {
        Files.writeString(dir.resolve("chat_template.jinja"), "{{ tools is none }} {{ documents is none }} "
                + "{{ enable_thinking is defined }} {{ add_generation_prompt }}"
                + "{% if enable_thinking is defined and enable_thinking is false %} no-think{% endif %}");
        ChatRequest r = oneUserMessage();
        assertThat(ChatTemplate.load(dir).render(r)).isEqualTo("True True False True");
        assertThat(ChatTemplate.load(dir).render(r.withArgument("enable_thinking", JSON.readTree("false"))))
                .isEqualTo("True True True True no-think");
    }

    @Test
    void missingOrBrokenFilesAreClearErrors() throws IOException {
        assertThatThrownBy(() -> ChatTemplate.load(dir))
                .isInstanceOf(MoeException.class).hasMessageContaining(dir.toString()).hasMessageContaining("no chat template");
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"chat_template\": ");
        assertThatThrownBy(() -> ChatTemplate.load(dir))
                .isInstanceOf(MoeException.class).hasMessageContaining("tokenizer_config.json").hasMessageContaining("not valid JSON");
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"chat_template\": 42}");
        assertThatThrownBy(() -> ChatTemplate.load(dir))
                .isInstanceOf(MoeException.class).hasMessageContaining("chat_template must be a string or a list");
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"chat_template\": \"x\", \"eos_token\": 3}");
        assertThatThrownBy(() -> ChatTemplate.load(dir))
                .isInstanceOf(MoeException.class).hasMessageContaining("eos_token");
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"chat_template\": \"a\\n{% if %}\"}");
        assertThatThrownBy(() -> ChatTemplate.load(dir))
                .isInstanceOf(JinjaSyntaxException.class).hasMessageContaining("tokenizer_config.json").hasMessageContaining("line 2");
        Files.writeString(dir.resolve("chat_template.jinja"), "ok\n{{ x | bogus }}");
        assertThatThrownBy(() -> ChatTemplate.load(dir))
                .isInstanceOf(JinjaSyntaxException.class).hasMessageContaining("chat_template.jinja").hasMessageContaining("line 2");
    }

    @Test
    void continuingTheFinalMessageRefusesBadCombinations() throws IOException {
        Files.writeString(dir.resolve("chat_template.jinja"), "{% for m in messages %}[{{ m.content }}]{% endfor %}");
        ChatTemplate t = ChatTemplate.load(dir);
        ArrayNode msgs = (ArrayNode) JSON.readTree("[{\"role\": \"assistant\", \"content\": \"Part\"}]");
        assertThat(t.render(ChatRequest.of(msgs, false).withContinueFinalMessage(true))).isEqualTo("[Part");
        assertThatThrownBy(() -> t.render(ChatRequest.of(msgs, true).withContinueFinalMessage(true)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not compatible");
        ArrayNode noContent = (ArrayNode) JSON.readTree("[{\"role\": \"assistant\"}]");
        assertThatThrownBy(() -> t.render(ChatRequest.of(noContent, false).withContinueFinalMessage(true)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no \"content\"");
        Files.writeString(dir.resolve("chat_template.jinja"), "{% for m in messages %}[{{ m.content | upper }}]{% endfor %}");
        assertThatThrownBy(() -> ChatTemplate.load(dir).render(ChatRequest.of(msgs, false).withContinueFinalMessage(true)))
                .isInstanceOf(MoeException.class).hasMessageContaining("does not appear");
    }

    @Test
    void requestLinesAreCheckedAndReadLikeTheFixtures() throws IOException {
        assertThatThrownBy(() -> ChatRequest.fromJson(JSON.readTree("{\"add_generation_prompt\": true}")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("messages");
        assertThatThrownBy(() -> ChatRequest.fromJson(JSON.readTree("{\"messages\": [], \"date\": \"15/01/2026\"}")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("15/01/2026");
        assertThatThrownBy(() -> ChatRequest.fromJson(JSON.readTree("{\"messages\": [], \"tools\": {}}")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tools");
        ChatRequest r = ChatRequest.fromJson(JSON.readTree(
                "{\"messages\": [], \"reasoning_effort\": \"low\", \"kind\": \"chat\", \"text\": \"x\", \"date\": \"2026-01-15\"}"));
        assertThat(r.templateArguments()).containsOnlyKeys("reasoning_effort");
        assertThat(r.addGenerationPrompt()).isFalse();
        assertThat(r.clock().instant().toString()).isEqualTo("2026-01-15T00:00:00Z");
    }
}
