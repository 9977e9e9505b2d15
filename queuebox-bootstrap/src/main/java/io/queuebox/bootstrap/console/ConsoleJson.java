package io.queuebox.bootstrap.console;

import com.fasterxml.jackson.core.SerializableString;
import com.fasterxml.jackson.core.io.CharacterEscapes;
import com.fasterxml.jackson.core.io.SerializedString;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * JSON for the console. Payloads, errors and ids are untrusted text, so besides JSON's own escapes the characters
 * that matter to HTML ({@code < > & '}) and the two line separators JavaScript treats as line ends are written as
 * {@code \\uXXXX}: a response that a browser ends up rendering as HTML (a proxy's wrong content type, an old
 * sniffing browser) still carries no markup. The page itself shows every value with {@code textContent}.
 */
final class ConsoleJson {

    private static final ObjectMapper MAPPER = new ObjectMapper();

    static {
        MAPPER.getFactory().setCharacterEscapes(new HtmlSafeEscapes());
    }

    private ConsoleJson() {
    }

    static String write(Object value) {
        try {
            return MAPPER.writeValueAsString(value);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static ObjectMapper mapper() {
        return MAPPER;
    }

    private static final class HtmlSafeEscapes extends CharacterEscapes {
        private final int[] escapes;

        HtmlSafeEscapes() {
            escapes = CharacterEscapes.standardAsciiEscapesForJSON();
            for (char c : new char[] {'<', '>', '&', '\''}) {
                escapes[c] = CharacterEscapes.ESCAPE_STANDARD;
            }
        }

        @Override
        public int[] getEscapeCodesForAscii() {
            return escapes;
        }

        @Override
        public SerializableString getEscapeSequence(int ch) {
            if (ch == 0x2028 || ch == 0x2029) {
                return new SerializedString(String.format("\\u%04x", ch));
            }
            return null;
        }
    }
}
