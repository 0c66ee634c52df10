/**
 * BPE tokenization from a model's {@code tokenizer.json} and {@code tokenizer_config.json}, with the same ids as
 * Hugging Face {@code tokenizers} for the byte-level files of gpt-oss, Qwen3 and DeepSeek-V3 (and for the
 * SentencePiece-style BPE of Mistral/Mixtral files).
 *
 * <pre>{@code
 * Tokenizer tokenizer = Tokenizer.load(Path.of("~/models/Qwen3-30B-A3B"));
 * int[] ids = tokenizer.encode("<|im_start|>user\nHi<|im_end|>\n");   // special tokens in the text are tokens
 * String text = tokenizer.decode(ids);                                   // special tokens kept
 * IncrementalDecoder stream = tokenizer.incrementalDecoder();            // one per generated sequence
 * for (int id : generated) System.out.print(stream.next(id));            // never half a character
 * System.out.print(stream.flush());
 * }</pre>
 *
 * <p>The pipeline, in the reference's order: {@link io.moe4j.text.tokenizer.AddedVocabulary} cuts added tokens out
 * of the text; {@link io.moe4j.text.tokenizer.TextNormalizer} normalizes what lies between them;
 * {@link io.moe4j.text.tokenizer.PreTokenizer} splits it into words (Oniguruma regexes translated by
 * {@link io.moe4j.text.tokenizer.OnigPatterns}, then the {@link io.moe4j.text.tokenizer.ByteLevel} byte mapping);
 * {@link io.moe4j.text.tokenizer.BpeModel} merges each word by rank, with a per-word cache. Decoding maps tokens back
 * to bytes and reads them with {@link io.moe4j.text.tokenizer.Utf8}'s lossy decoding (or runs the SentencePiece-style
 * decoder chain).
 *
 * <p>Supported: models of type BPE (merges as "a b" strings or [a, b] pairs, {@code ignore_merges},
 * {@code byte_fallback}, {@code unk_token}/{@code fuse_unk}, subword prefix and suffix); normalizers NFC, NFD, NFKC,
 * NFKD, Lowercase, Prepend, Replace and Sequence; pre-tokenizers Split (every behavior, {@code invert}), ByteLevel,
 * Metaspace (every prepend scheme) and Sequence, or none; decoders ByteLevel
 * ({@link io.moe4j.text.tokenizer.ByteDecoding}), none, and the SentencePiece-style chain of Replace or Metaspace,
 * ByteFallback, Fuse and Strip ({@link io.moe4j.text.tokenizer.PieceDecoding}). Anything else (WordPiece, Unigram,
 * BERT pre-tokenizers, other decoders ...) is refused at load with an {@link io.moe4j.MoeException} naming the file
 * and key.
 */
package io.moe4j.text.tokenizer;
