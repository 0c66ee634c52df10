package io.moe4j.backend.oracle;

import io.moe4j.backend.Support;

/** One backend the oracle asked, and its answer with the reason. */
public record Candidate(String backendName, Support support) {
    public boolean supported() {
        return support.supported();
    }

    @Override
    public String toString() {
        return backendName + ": " + (supported() ? "supported" : "unsupported") + " — " + support.reason();
    }
}
