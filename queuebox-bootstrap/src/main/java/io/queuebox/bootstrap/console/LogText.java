package io.queuebox.bootstrap.console;

/**
 * Text a client chose (a replay's filter, an aggregate id), made safe to put in a log line: a newline in it would
 * let the client write a line of its own (log forging), and other control characters can hide or rewrite what a
 * terminal shows. Each becomes a visible escape (a newline as backslash-n, others as backslash-u and four hex digits), so the text stays readable and exact.
 */
final class LogText {

    private LogText() {
    }

    static String escape(String text) {
        StringBuilder escaped = new StringBuilder(text.length());
        text.codePoints().forEach(c -> {
            if (c == '\\') {
                escaped.append("\\\\");
            } else if (c == '\n') {
                escaped.append("\\n");
            } else if (c == '\r') {
                escaped.append("\\r");
            } else if (c == '\t') {
                escaped.append("\\t");
            } else if (Character.isISOControl(c) || c == 0x2028 || c == 0x2029) {
                escaped.append(String.format("\\u%04x", c));
            } else {
                escaped.appendCodePoint(c);
            }
        });
        return escaped.toString();
    }
}
