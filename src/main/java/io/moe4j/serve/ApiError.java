package io.moe4j.serve;

/**
 * A request the server refuses, as OpenAI reports it: an HTTP status and {@code {"error": {"message", "type",
 * "param", "code"}}}. {@code param} names the request field at fault (null when none is).
 */
public final class ApiError extends RuntimeException {
    private final int status;
    private final String type;
    private final String param;
    private final String code;

    public ApiError(int status, String message, String type, String param, String code) {
        super(message, null, false, false);
        this.status = status;
        this.type = type;
        this.param = param;
        this.code = code;
    }

    public static ApiError badRequest(String message, String param) {
        return new ApiError(400, message, "invalid_request_error", param, null);
    }

    public static ApiError badRequest(String message, String param, String code) {
        return new ApiError(400, message, "invalid_request_error", param, code);
    }

    public int status() {
        return status;
    }

    public String type() {
        return type;
    }

    public String param() {
        return param;
    }

    public String code() {
        return code;
    }
}
