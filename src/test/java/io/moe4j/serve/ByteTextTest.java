package io.moe4j.serve;

import io.moe4j.serve.toy.ByteText;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class ByteTextTest {
    private final ByteText text = new ByteText();

    @Test
    void detokenizerHoldsBackPartialCharacters() {
        String s = "aé€😀b";
        TextCodec.Detokenizer d = text.detokenizer();
        StringBuilder out = new StringBuilder();
        List<String> pieces = new java.util.ArrayList<>();
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            String piece = d.accept(b & 0xff);
            pieces.add(piece);
            out.append(piece);
        }
        out.append(d.flush());
        assertThat(out.toString()).isEqualTo(s);
        // é is two bytes: nothing shows after its first one, the whole character after its second.
        assertThat(pieces.subList(0, 3)).containsExactly("a", "", "é");
        assertThat(d.accept(ByteText.EOS)).isEmpty();
    }

    @Test
    void aTruncatedCharacterFlushesAsReplacement() {
        TextCodec.Detokenizer d = text.detokenizer();
        byte[] euro = "€".getBytes(StandardCharsets.UTF_8);
        assertThat(d.accept(euro[0] & 0xff) + d.accept(euro[1] & 0xff)).isEmpty();
        assertThat(d.flush()).isEqualTo("\uFFFD");
    }

    @Test
    void chatRendersEveryMessageAndOpensTheAssistantTurn() {
        int[] ids = text.renderChat(new ChatPrompt(List.of(new ChatMessage("system", "be brief", null),
                new ChatMessage("user", "hi", null)), null));
        StringBuilder s = new StringBuilder();
        for (int id : ids) {
            s.append(id == ByteText.START ? "<s>" : id == ByteText.END ? "<e>" : String.valueOf((char) id));
        }
        assertThat(s.toString()).isEqualTo("<s>system\nbe brief<e><s>user\nhi<e><s>assistant\n");
    }
}
