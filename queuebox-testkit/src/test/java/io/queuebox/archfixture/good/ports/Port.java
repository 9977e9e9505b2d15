package io.queuebox.archfixture.good.ports;

import java.time.Duration;
import java.util.List;

public interface Port {
    List<String> names();

    Duration timeout();
}
