package io.queuebox.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

class ChartsTest {

    @Test
    void drawsOneBarPerValueScaledToTheLargestAndSkipsMissingValues() throws Exception {
        LinkedHashMap<String, List<Double>> series = new LinkedHashMap<>();
        series.put("relay", Arrays.asList(50.0, 100.0));
        series.put("ceiling <a&b>", new ArrayList<>(Arrays.asList(null, 25.0)));

        Document svg = parse(Charts.bars("Drain & co", "rows/s", List.of("kafka", "rabbitmq"), series));

        List<Element> bars = new ArrayList<>();
        NodeList rects = svg.getElementsByTagName("rect");
        for (int i = 0; i < rects.getLength(); i++) {
            Element rect = (Element) rects.item(i);
            if (rect.getElementsByTagName("title").getLength() == 1) {
                bars.add(rect);
            }
        }
        assertThat(bars).hasSize(3);
        int tallest = Integer.parseInt(bars.get(1).getAttribute("height"));
        assertThat(Integer.parseInt(bars.get(0).getAttribute("height"))).isEqualTo(tallest / 2);
        assertThat(Integer.parseInt(bars.get(2).getAttribute("height"))).isEqualTo(tallest / 4);
        assertThat(bars.get(2).getTextContent()).isEqualTo("ceiling <a&b> rabbitmq: 25");
    }

    @Test
    void percentilesAreNearestRankOnSortedNanos() {
        long[] nanos = new long[1000];
        for (int i = 0; i < nanos.length; i++) {
            nanos[i] = (i + 1) * 1_000_000L;
        }
        assertThat(Steady.percentile(nanos, 0.50)).isEqualTo(500.0);
        assertThat(Steady.percentile(nanos, 0.99)).isEqualTo(990.0);
        assertThat(Steady.percentile(nanos, 0.999)).isEqualTo(999.0);
        assertThat(Steady.percentile(new long[0], 0.5)).isNull();
    }

    private static Document parse(String xml) throws Exception {
        return DocumentBuilderFactory.newInstance().newDocumentBuilder()
                .parse(new ByteArrayInputStream(xml.getBytes(StandardCharsets.UTF_8)));
    }
}
