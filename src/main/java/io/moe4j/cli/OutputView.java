package io.moe4j.cli;

import io.moe4j.generate.MoeModel;

import java.io.PrintWriter;

/**
 * What the user sees of the model's text: as it is, or (for chat models that think aloud) the answer with the
 * reasoning set apart.
 */
interface OutputView {

    void accept(String piece);

    /** Shows what is still held back once generation ends. */
    void finish();

    static OutputView of(MoeModel model, boolean split, PrintWriter out) {
        return new OutputView() {
            @Override
            public void accept(String piece) {
                out.print(piece);
                out.flush();
            }

            @Override
            public void finish() {
                out.flush();
            }
        };
    }
}
