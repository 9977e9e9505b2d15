package io.queuebox.bench;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Plain SVG bar charts, grouped by category, one colour per series; no library, readable in any browser. */
final class Charts {

    private static final String[] COLOURS = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1"};

    private Charts() {
    }

    /** {@code series} maps a series name to one value per category (null for none). */
    static String bars(String title, String unit, List<String> categories, LinkedHashMap<String, List<Double>> series) {
        int groups = categories.size();
        int perGroup = series.size();
        int barWidth = 14;
        int groupWidth = perGroup * barWidth + 16;
        int left = 70;
        int top = 40;
        int plotHeight = 220;
        int width = Math.max(480, left + groups * groupWidth + 20);
        int height = top + plotHeight + 110 + 20 * ((perGroup + 2) / 3);
        double max = 0;
        for (List<Double> values : series.values()) {
            for (Double v : values) {
                if (v != null) {
                    max = Math.max(max, v);
                }
            }
        }
        max = niceCeiling(max);
        StringBuilder svg = new StringBuilder();
        svg.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                + "font-family=\"sans-serif\" font-size=\"11\">%n", width, height));
        svg.append(String.format(Locale.ROOT, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>%n", width, height));
        svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"20\" font-size=\"14\" font-weight=\"bold\">%s</text>%n",
                left, escape(title)));
        for (int i = 0; i <= 4; i++) {
            double value = max * i / 4;
            int y = top + plotHeight - (int) (plotHeight * i / 4.0);
            svg.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>%n",
                    left, y, width - 10, y));
            svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>%n",
                    left - 4, y + 4, format(value)));
        }
        svg.append(String.format(Locale.ROOT, "<text x=\"12\" y=\"%d\" transform=\"rotate(-90 12 %d)\" text-anchor=\"middle\">%s</text>%n",
                top + plotHeight / 2, top + plotHeight / 2, escape(unit)));
        int s = 0;
        for (Map.Entry<String, List<Double>> entry : series.entrySet()) {
            for (int g = 0; g < groups; g++) {
                Double v = g < entry.getValue().size() ? entry.getValue().get(g) : null;
                if (v == null || max == 0) {
                    continue;
                }
                int h = (int) Math.round(plotHeight * Math.min(v, max) / max);
                int x = left + 8 + g * groupWidth + s * barWidth;
                svg.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\">"
                        + "<title>%s: %s</title></rect>%n", x, top + plotHeight - h, barWidth - 2, h,
                        COLOURS[s % COLOURS.length], escape(entry.getKey() + " " + categories.get(g)), format(v)));
            }
            s++;
        }
        for (int g = 0; g < groups; g++) {
            int x = left + 8 + g * groupWidth + perGroup * barWidth / 2;
            int y = top + plotHeight + 12;
            svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" transform=\"rotate(-40 %d %d)\">%s</text>%n",
                    x, y, x, y, escape(categories.get(g))));
        }
        int legendY = top + plotHeight + 95;
        s = 0;
        for (String name : series.keySet()) {
            int x = left + (s % 3) * 200;
            int y = legendY + (s / 3) * 18;
            svg.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                    + "<text x=\"%d\" y=\"%d\">%s</text>%n", x, y - 10, COLOURS[s % COLOURS.length], x + 16, y, escape(name)));
            s++;
        }
        svg.append("</svg>\n");
        return svg.toString();
    }

    private static double niceCeiling(double max) {
        if (max <= 0) {
            return 1;
        }
        double magnitude = Math.pow(10, Math.floor(Math.log10(max)));
        for (double step : new double[] {1, 2, 2.5, 5, 10}) {
            if (step * magnitude >= max) {
                return step * magnitude;
            }
        }
        return 10 * magnitude;
    }

    private static String format(double value) {
        if (value >= 1000) {
            return String.format(Locale.ROOT, "%,.0f", value);
        }
        if (value >= 10 || value == Math.rint(value)) {
            return String.format(Locale.ROOT, "%.0f", value);
        }
        return String.format(Locale.ROOT, "%.2f", value);
    }

    private static String escape(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }
}
