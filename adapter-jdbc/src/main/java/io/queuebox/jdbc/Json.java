package io.queuebox.jdbc;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The JSON the SQL adapters write and read: the headers column (a flat object of strings) and the array
 * parameters that SQL Server's OPENJSON turns into rows. Only these shapes, so no JSON library is needed.
 */
public final class Json {

    private Json() {
    }

    /** A flat object of strings, keys sorted. */
    public static String object(Map<String, String> values) {
        StringBuilder out = new StringBuilder("{");
        boolean first = true;
        for (Map.Entry<String, String> entry : new TreeMap<>(values).entrySet()) {
            if (!first) {
                out.append(',');
            }
            first = false;
            string(out, entry.getKey());
            out.append(':');
            string(out, entry.getValue());
        }
        return out.append('}').toString();
    }

    /** An array of strings. */
    public static String array(Collection<?> values) {
        StringBuilder out = new StringBuilder("[");
        boolean first = true;
        for (Object value : values) {
            if (!first) {
                out.append(',');
            }
            first = false;
            string(out, value.toString());
        }
        return out.append(']').toString();
    }

    /** An array of flat objects whose values are strings or numbers, keys in the given order. */
    public static String records(List<Map<String, Object>> records) {
        StringBuilder out = new StringBuilder("[");
        for (int i = 0; i < records.size(); i++) {
            if (i > 0) {
                out.append(',');
            }
            out.append('{');
            boolean first = true;
            for (Map.Entry<String, Object> field : records.get(i).entrySet()) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                string(out, field.getKey());
                out.append(':');
                if (field.getValue() instanceof Number number) {
                    out.append(number.longValue());
                } else {
                    string(out, field.getValue().toString());
                }
            }
            out.append('}');
        }
        return out.append(']').toString();
    }

    /** Reads a flat object of strings, as {@link #object} writes it (and as SQL Server's JSON functions do). */
    public static Map<String, String> parseObject(String json) {
        return members(json, Reader::string);
    }

    /**
     * The JSON type of a value, by its first character: object, array, string, boolean, null or number (the names
     * of PostgreSQL's {@code jsonb_typeof}).
     */
    public static String type(String json) {
        Reader reader = new Reader(json);
        reader.skipSpace();
        return switch (reader.peek()) {
            case '{' -> "object";
            case '[' -> "array";
            case '"' -> "string";
            case 't', 'f' -> "boolean";
            case 'n' -> "null";
            default -> "number";
        };
    }

    /**
     * Reads a JSON object as the text of each member, as PostgreSQL's {@code jsonb_each_text} gives it from the
     * object's own text form: a string value unescaped, a JSON null as {@code null}, any other value (number,
     * boolean, object, array) as its JSON text, exactly as written. In the order written.
     */
    public static Map<String, String> parseMembersAsText(String json) {
        return members(json, Reader::valueText);
    }

    private static Map<String, String> members(String json, java.util.function.Function<Reader, String> value) {
        Reader reader = new Reader(json);
        Map<String, String> values = new LinkedHashMap<>();
        reader.skipSpace();
        reader.expect('{');
        reader.skipSpace();
        if (reader.peek() == '}') {
            reader.next();
        } else {
            while (true) {
                reader.skipSpace();
                String key = reader.string();
                reader.skipSpace();
                reader.expect(':');
                reader.skipSpace();
                values.put(key, value.apply(reader));
                reader.skipSpace();
                char c = reader.next();
                if (c == '}') {
                    break;
                }
                if (c != ',') {
                    throw reader.error("',' or '}'");
                }
            }
        }
        reader.skipSpace();
        if (!reader.atEnd()) {
            throw reader.error("the end");
        }
        return values;
    }

    private static void string(StringBuilder out, String value) {
        out.append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }

    private static final class Reader {
        private final String text;
        private int position;

        Reader(String text) {
            this.text = text;
        }

        boolean atEnd() {
            return position >= text.length();
        }

        char peek() {
            if (atEnd()) {
                throw error("more input");
            }
            return text.charAt(position);
        }

        char next() {
            char c = peek();
            position++;
            return c;
        }

        void expect(char c) {
            if (next() != c) {
                throw error("'" + c + "'");
            }
        }

        void skipSpace() {
            while (!atEnd() && Character.isWhitespace(text.charAt(position))) {
                position++;
            }
        }

        String string() {
            expect('"');
            StringBuilder out = new StringBuilder();
            while (true) {
                char c = next();
                if (c == '"') {
                    return out.toString();
                }
                if (c != '\\') {
                    out.append(c);
                    continue;
                }
                char escaped = next();
                switch (escaped) {
                    case '"', '\\', '/' -> out.append(escaped);
                    case 'b' -> out.append('\b');
                    case 'f' -> out.append('\f');
                    case 'n' -> out.append('\n');
                    case 'r' -> out.append('\r');
                    case 't' -> out.append('\t');
                    case 'u' -> {
                        if (position + 4 > text.length()) {
                            throw error("four hex digits");
                        }
                        out.append((char) Integer.parseInt(text.substring(position, position + 4), 16));
                        position += 4;
                    }
                    default -> throw error("an escape sequence");
                }
            }
        }

        /** A string's text, null for a JSON null, and any other value's JSON text as it stands. */
        String valueText() {
            char c = peek();
            if (c == '"') {
                return string();
            }
            int start = position;
            if (c == '{' || c == '[') {
                // Only the extent of the value is needed: count brackets outside strings, no recursion.
                int depth = 0;
                do {
                    char d = peek();
                    if (d == '"') {
                        string();
                        continue;
                    }
                    position++;
                    if (d == '{' || d == '[') {
                        depth++;
                    } else if (d == '}' || d == ']') {
                        depth--;
                    }
                } while (depth > 0);
            } else {
                while (!atEnd() && ",}] \t\r\n".indexOf(text.charAt(position)) < 0) {
                    position++;
                }
                if (position == start) {
                    throw error("a value");
                }
            }
            String raw = text.substring(start, position);
            return raw.equals("null") ? null : raw;
        }

        IllegalStateException error(String expected) {
            return new IllegalStateException("headers column is not a flat JSON object of strings: expected "
                    + expected + " at position " + position);
        }
    }
}
