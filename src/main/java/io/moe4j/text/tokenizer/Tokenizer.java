package io.moe4j.text.tokenizer;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * A BPE tokenizer read from a model's {@code tokenizer.json} and {@code tokenizer_config.json}, giving the same ids
 * as Hugging Face {@code tokenizers} for the byte-level files of gpt-oss, Qwen3 and DeepSeek-V3 (and for the
 * SentencePiece-style BPE of Mistral/Mixtral files: '▁' word marks, byte fallback).
 *
 * <p>Encoding, in the reference's order: added tokens written as-is are cut out of the text first; the text between
 * them is normalized (e.g. NFC), added tokens marked {@code normalized} are cut out of that; the rest is
 * pre-tokenized (the model's Split regexes, then the byte-level mapping) and each word runs through the BPE merges.
 * No special tokens are added: a caller that wants a BOS puts {@link #bosId()} in front itself.
 *
 * <p>Decoding maps each token back to its bytes and reads them as UTF-8 (ill-formed bytes become U+FFFD). Ids that
 * name no token (a model's embedding often has more rows than the tokenizer has tokens) are skipped, as the
 * reference does. Instances are immutable apart from an internal word cache and safe to share between threads.
 */
public final class Tokenizer {
    private final String source;
    private final TextNormalizer normalizer;
    private final PreTokenizer preTokenizer;
    private final BpeModel model;
    private final AddedVocabulary rawAdded;
    private final AddedVocabulary normalizedAdded;
    private final Map<String, Integer> addedIds;
    private final String[] tokens;
    private final boolean[] special;
    private final Decoding decoding;
    private final String bosToken;
    private final String eosToken;
    private final OptionalInt bosId;
    private final OptionalInt eosId;
    private final List<AddedToken> addedTokens;
    /** tokenizer_config.json's add_bos_token and add_eos_token: what {@link #encodePrompt} adds around a text. */
    private final boolean addBos;
    private final boolean addEos;

    Tokenizer(String source, TextNormalizer normalizer, PreTokenizer preTokenizer, BpeModel model,
              List<AddedToken> added, String[] tokens, boolean[] special, Decoding decoding,
              String bosToken, String eosToken, boolean addBos, boolean addEos) {
        this.source = source;
        this.normalizer = normalizer;
        this.preTokenizer = preTokenizer;
        this.model = model;
        this.tokens = tokens;
        this.decoding = decoding;
        this.special = special;
        Map<String, AddedToken> raw = new java.util.HashMap<>();
        Map<String, AddedToken> normalized = new java.util.HashMap<>();
        Map<String, Integer> ids = new java.util.HashMap<>();
        for (AddedToken t : added) {
            ids.put(t.content(), t.id());
            if (t.normalized()) {
                // Matched in normalized text, so its own content is normalized the same way.
                normalized.put(normalizer.normalize(t.content()), t);
            } else {
                raw.put(t.content(), t);
            }
        }
        this.rawAdded = new AddedVocabulary(raw);
        this.normalizedAdded = new AddedVocabulary(normalized);
        this.addedIds = Map.copyOf(ids);
        this.addedTokens = List.copyOf(added);
        this.bosToken = bosToken;
        this.eosToken = eosToken;
        this.bosId = idOrEmpty(bosToken);
        this.eosId = idOrEmpty(eosToken);
        this.addBos = addBos;
        this.addEos = addEos;
    }

    /**
     * Loads the tokenizer of a model directory: its {@code tokenizer.json} (or {@code tokenizer.json.gz}) and, when
     * present, {@code tokenizer_config.json}. {@code modelDir} may also name a tokenizer.json file itself.
     *
     * @throws io.moe4j.MoeException naming the file and key when a file is missing, does not parse, or asks for
     *                               something this tokenizer does not implement (a model other than BPE, an unknown
     *                               pre-tokenizer, normalizer or decoder, a regex Java cannot express)
     */
    public static Tokenizer load(Path modelDir) {
        return TokenizerLoader.load(modelDir);
    }

    private OptionalInt idOrEmpty(String token) {
        return token == null ? OptionalInt.empty() : id(token);
    }

    /**
     * The ids of a raw prompt as the model's tokenizer makes them by default (transformers' {@code tokenizer(text)},
     * what vLLM feeds a completion): {@link #encode}, with the beginning-of-sequence token in front where
     * tokenizer_config.json sets {@code add_bos_token} (DeepSeek-V3) and the end-of-sequence token behind where it
     * sets {@code add_eos_token}. A chat template writes its own markers, so rendered chats take {@link #encode}.
     */
    public int[] encodePrompt(String text) {
        int[] ids = encode(text);
        boolean bos = addBos && bosId.isPresent();
        boolean eos = addEos && eosId.isPresent();
        if (!bos && !eos) {
            return ids;
        }
        int[] out = new int[ids.length + (bos ? 1 : 0) + (eos ? 1 : 0)];
        if (bos) {
            out[0] = bosId.getAsInt();
        }
        System.arraycopy(ids, 0, out, bos ? 1 : 0, ids.length);
        if (eos) {
            out[out.length - 1] = eosId.getAsInt();
        }
        return out;
    }

    /**
     * The ids of {@code text}; special tokens written in the text are matched as tokens, none are added.
     *
     * @throws IllegalArgumentException if the text holds an unpaired surrogate (it has no UTF-8 form to tokenize)
     */
    public int[] encode(String text) {
        checkWellFormed(text);
        IntList out = new IntList();
        List<AddedVocabulary.Piece> pieces = rawAdded.split(text);
        for (int p = 0; p < pieces.size(); p++) {
            AddedVocabulary.Piece piece = pieces.get(p);
            if (piece.token() != null) {
                out.add(piece.token().id());
                continue;
            }
            String normal = normalizer.normalize(piece.text());
            List<AddedVocabulary.Piece> inner = normalizedAdded.split(normal);
            for (int q = 0; q < inner.size(); q++) {
                AddedVocabulary.Piece part = inner.get(q);
                if (part.token() != null) {
                    out.add(part.token().id());
                } else if (preTokenizer == null) {
                    model.encodeWord(part.text(), out);
                } else {
                    // The first piece of text begins the input unless an added token came before it.
                    boolean atStart = p == 0 && q == 0;
                    List<String> words = new java.util.ArrayList<>();
                    preTokenizer.split(part.text(), atStart, words);
                    for (String word : words) {
                        model.encodeWord(word, out);
                    }
                }
            }
        }
        return out.toArray();
    }

    private static void checkWellFormed(String text) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (Character.isSurrogate(c)) {
                boolean paired = Character.isHighSurrogate(c) && i + 1 < text.length()
                        && Character.isLowSurrogate(text.charAt(i + 1));
                if (paired) {
                    i++;
                } else {
                    throw new IllegalArgumentException(String.format(
                            "text to tokenize holds an unpaired surrogate U+%04X at index %d", (int) c, i));
                }
            }
        }
    }

    /** The text of {@code ids}, special tokens kept. */
    public String decode(int[] ids) {
        return decode(ids, false);
    }

    /** The text of {@code ids}, special tokens kept or left out. */
    public String decode(int[] ids, boolean skipSpecialTokens) {
        return decoding.decode(ids, skipSpecialTokens);
    }

    /** A streaming decoder for one sequence, special tokens kept. */
    public IncrementalDecoder incrementalDecoder() {
        return incrementalDecoder(false);
    }

    /** A streaming decoder for one sequence, special tokens kept or left out. */
    public IncrementalDecoder incrementalDecoder(boolean skipSpecialTokens) {
        return new IncrementalDecoder(decoding.stream(skipSpecialTokens));
    }

    /**
     * The token of {@code id} as the vocabulary writes it (byte-level symbols: a leading space is 'Ġ').
     *
     * @throws IllegalArgumentException if no token has this id
     */
    public String token(int id) {
        if (id < 0 || id >= tokens.length || tokens[id] == null) {
            throw new IllegalArgumentException("no token has id " + id + " in " + source + " (size " + tokens.length
                    + ")");
        }
        return tokens[id];
    }

    /**
     * The bytes token {@code id} adds to decoded text, for byte-level tokenizers (ByteLevel decoder, or none); null
     * for an id that names no token, or when the decoder does not map each token to fixed bytes (SentencePiece
     * pieces, whose leading space depends on the position).
     */
    public byte[] tokenBytes(int id) {
        if (decoding instanceof ByteDecoding b && id >= 0 && id < b.bytes().length && b.bytes()[id] != null) {
            return b.bytes()[id].clone();
        }
        return null;
    }

    /** The id of a token written as the vocabulary writes it (or as an added token's content). */
    public OptionalInt id(String token) {
        Integer id = addedIds.get(token);
        if (id == null) {
            id = model.vocab().get(token);
        }
        return id == null ? OptionalInt.empty() : OptionalInt.of(id);
    }

    /** One more than the largest id (the vocabulary and the added tokens together). */
    public int vocabSize() {
        return tokens.length;
    }

    /** Whether {@code id} is a special added token (chat markers, end of text ...). */
    public boolean isSpecial(int id) {
        return id >= 0 && id < special.length && special[id];
    }

    /** The added tokens (special and not), as tokenizer.json and tokenizer_config.json list them. */
    public List<AddedToken> addedTokens() {
        return addedTokens;
    }

    /** The id of the beginning-of-sequence token named by tokenizer_config.json, if any. */
    public OptionalInt bosId() {
        return bosId;
    }

    /** The id of the end-of-sequence token named by tokenizer_config.json, if any. */
    public OptionalInt eosId() {
        return eosId;
    }

    /** The beginning-of-sequence token named by tokenizer_config.json, if any. */
    public Optional<String> bosToken() {
        return Optional.ofNullable(bosToken);
    }

    /** The end-of-sequence token named by tokenizer_config.json, if any. */
    public Optional<String> eosToken() {
        return Optional.ofNullable(eosToken);
    }

    @Override
    public String toString() {
        return "Tokenizer[" + source + ", " + tokens.length + " tokens]";
    }
}
