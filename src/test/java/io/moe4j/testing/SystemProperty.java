package io.moe4j.testing;

/** A system property set for the length of a test body and restored after it (tests run one at a time). */
public final class SystemProperty {
    private SystemProperty() {
    }

    /** Runs {@code body} with {@code key} set to {@code value}, then puts back what was there (or nothing). */
    public static void with(String key, String value, Runnable body) {
        String before = System.getProperty(key);
        System.setProperty(key, value);
        try {
            body.run();
        } finally {
            if (before == null) {
                System.clearProperty(key);
            } else {
                System.setProperty(key, before);
            }
        }
    }
}
