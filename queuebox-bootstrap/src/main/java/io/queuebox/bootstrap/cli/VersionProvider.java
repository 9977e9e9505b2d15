package io.queuebox.bootstrap.cli;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;
import picocli.CommandLine.IVersionProvider;

/** The version Maven wrote into {@code version.properties} at build time. */
final class VersionProvider implements IVersionProvider {

    static String version() {
        Properties properties = new Properties();
        try (InputStream in = VersionProvider.class.getResourceAsStream("/io/queuebox/bootstrap/version.properties")) {
            if (in != null) {
                properties.load(in);
            }
        } catch (IOException e) {
            // fall through to "unknown": a missing version must not stop the service
        }
        return properties.getProperty("version", "unknown");
    }

    @Override
    public String[] getVersion() {
        return new String[] {"QueueBox " + version(), "Java " + Runtime.version() + " (" + System.getProperty("java.vendor") + ")"};
    }
}
